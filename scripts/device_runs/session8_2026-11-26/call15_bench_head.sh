# Device call 15 (nvidia-h100-x1), eighth session, harness 0.4.9 (the head of this stop):
# bench_eval of this tree and of 9c78ee4 on one machine.
set -o pipefail
source scripts/device_runs/setup_gpu_machine.sh
source scripts/device_runs/session8_2026-11-26/setup_base.sh
t0=$(date +%s)
timeout 200 python3 scripts/bench_eval.py --device cuda --world-size 1 --repeats 5 --out $OUT --tag _ws1_0.4.9 2>&1 | grep -v "^\[rank" | grep "^|\|max/min" | cut -c1-220 | tail -3
echo "new: $(( $(date +%s) - t0 )) s"; t1=$(date +%s)
(cd /tmp/base && PYTHONPATH=/tmp/site:/tmp/base timeout 150 python3 scripts/bench_eval.py --device cuda --world-size 1 --repeats 5 --out $OUT/base --tag _ws1_9c78ee4 2>&1 | grep -v "^\[rank" | grep "^|\|max/min" | cut -c1-220 | tail -3)
echo "base: $(( $(date +%s) - t1 )) s"
