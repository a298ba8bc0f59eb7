# Device call 1 (nvidia-h100-x1), ninth session, harness 0.4.11: the lazy-load stall behind a
# held gate (0.4.9's set-up and this tree's), its GPU test, and bench_eval of this tree and
# of 9c78ee4 on one machine.
set -o pipefail
source scripts/device_runs/setup_gpu_machine.sh
source scripts/device_runs/session8_2026-11-26/setup_base.sh
D=scripts/device_runs/session9_2026-11-26
python3 $D/lazy_load_check.py old 2>&1 | tail -3
python3 $D/lazy_load_check.py new 2>&1 | tail -3
timeout 120 python3 -m pytest tests/engine/test_gpu_ws1.py -m gpu -q -k delivering -p no:cacheprovider 2>&1 | tail -2
t0=$(date +%s)
timeout 220 python3 scripts/bench_eval.py --device cuda --world-size 1 --repeats 5 --out $OUT --tag _ws1_0.4.11 2>&1 | grep -v "^\[rank" | grep "^|\|max/min" | cut -c1-220 | tail -3
echo "new: $(( $(date +%s) - t0 )) s"; t1=$(date +%s)
(cd /tmp/base && PYTHONPATH=/tmp/site:/tmp/base timeout 170 python3 scripts/bench_eval.py --device cuda --world-size 1 --repeats 5 --out $OUT/base --tag _ws1_9c78ee4 2>&1 | grep -v "^\[rank" | grep "^|\|max/min" | cut -c1-220 | tail -3)
echo "base: $(( $(date +%s) - t1 )) s"
