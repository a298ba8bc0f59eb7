# Device call 7 (nvidia-h100-x1), seventh session: node-seconds and spread of the allreduce
# expert (bench_eval, 5 evaluations per shape, world size 1) on this tree and on 9c78ee4
# (the tree #22 and #23 compare against), on one machine.
set -o pipefail
source scripts/device_runs/setup_gpu_machine.sh
source scripts/device_runs/session7_2026-11-26/setup_base.sh
t0=$(date +%s)
timeout 270 python3 scripts/bench_eval.py --device cuda --world-size 1 --repeats 5 --out $OUT --tag _ws1_0.4.5 2>&1 | grep -v "^\[rank" | grep "^|\|max/min" | cut -c1-220 | tail -3
echo "new: $(( $(date +%s) - t0 )) s"; t1=$(date +%s)
(cd /tmp/base && PYTHONPATH=/tmp/site:/tmp/base timeout 270 python3 scripts/bench_eval.py --device cuda --world-size 1 --repeats 5 --out $OUT/base --tag _ws1_9c78ee4 2>&1 | grep -v "^\[rank" | grep "^|\|max/min" | cut -c1-220 | tail -3)
echo "base: $(( $(date +%s) - t1 )) s"
