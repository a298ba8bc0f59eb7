# Device call 7 (nvidia-h100-x1), eighth session, harness 0.4.8: bench_eval of this tree and of
# 9c78ee4 on one machine; the GPU test of batch sizes for host-waiting calls.
set -o pipefail
source scripts/device_runs/setup_gpu_machine.sh
source scripts/device_runs/session8_2026-11-26/setup_base.sh
t0=$(date +%s)
timeout 200 python3 scripts/bench_eval.py --device cuda --world-size 1 --repeats 5 --out $OUT --tag _ws1_0.4.8 2>&1 | grep -v "^\[rank" | grep "^|\|max/min" | cut -c1-220 | tail -3
echo "new: $(( $(date +%s) - t0 )) s"; t1=$(date +%s)
(cd /tmp/base && PYTHONPATH=/tmp/site:/tmp/base timeout 150 python3 scripts/bench_eval.py --device cuda --world-size 1 --repeats 5 --out $OUT/base --tag _ws1_9c78ee4 2>&1 | grep -v "^\[rank" | grep "^|\|max/min" | cut -c1-220 | tail -3)
echo "base: $(( $(date +%s) - t1 )) s"; t2=$(date +%s)
timeout 200 python3 -m pytest -q -m gpu tests/engine/test_gpu_ws1.py -x 2>&1 | tail -4
echo "tests: $(( $(date +%s) - t2 )) s"
