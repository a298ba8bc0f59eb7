# Device call 9 (nvidia-h100-x1), seventh session: call 7's second half, 9c78ee4 at world
# size 1 (setup_base.sh lets its allreduce run there; call 7's attempt was refused by that
# tree: "runs at world sizes [2, 4, 8], not 1"). Same machine as call 7 (still held).
set -o pipefail
source scripts/device_runs/setup_gpu_machine.sh
source scripts/device_runs/session7_2026-11-26/setup_base.sh
t1=$(date +%s)
(cd /tmp/base && PYTHONPATH=/tmp/site:/tmp/base timeout 270 python3 scripts/bench_eval.py --device cuda --world-size 1 --repeats 5 --out $OUT/base --tag _ws1_9c78ee4 2>&1 | grep -v "^\[rank" | grep "^|\|max/min\|rror" | cut -c1-220 | tail -4)
echo "base: $(( $(date +%s) - t1 )) s"
