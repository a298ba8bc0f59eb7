# Device call 8 (nvidia-h100-x1), ninth session, harness 0.4.11 (the head): bench_eval of 9c78ee4
# FIRST, then of this tree, on one machine: calls 1 and 4 ran this tree first, and in call 4
# its candidate's first call (`trial`) read 0.5 s more than 9c78ee4's. Which tree goes first
# on a fresh machine, or the tree itself?
set -o pipefail
source scripts/device_runs/setup_gpu_machine.sh
source scripts/device_runs/session8_2026-11-26/setup_base.sh
t1=$(date +%s)
(cd /tmp/base && PYTHONPATH=/tmp/site:/tmp/base timeout 200 python3 scripts/bench_eval.py --device cuda --world-size 1 --repeats 5 --out $OUT/base --tag _ws1_9c78ee4 2>&1 | grep -v "^\[rank" | grep "^|\|max/min" | cut -c1-220 | tail -3)
echo "base: $(( $(date +%s) - t1 )) s"; t0=$(date +%s)
timeout 220 python3 scripts/bench_eval.py --device cuda --world-size 1 --repeats 5 --out $OUT --tag _ws1_0.4.11 2>&1 | grep -v "^\[rank" | grep "^|\|max/min" | cut -c1-220 | tail -3
echo "new: $(( $(date +%s) - t0 )) s"
