# Device calls 8 and 9 (nvidia-h100-x1, one machine: call 9 follows while it is warm), eighth
# session, harness 0.4.8: bench_eval of this tree, then half of the references against
# themselves (call5_full.sh ids_a.txt). Call 9: the other half, then 9c78ee4's bench_eval.
set -o pipefail
t0=$(date +%s)
source scripts/device_runs/setup_gpu_machine.sh
timeout 200 python3 scripts/bench_eval.py --device cuda --world-size 1 --repeats 5 --out $OUT --tag _ws1_0.4.8 2>&1 | grep -v "^\[rank" | grep "^|\|max/min" | cut -c1-220 | tail -3
echo "new: $(( $(date +%s) - t0 )) s"
bash scripts/device_runs/session8_2026-11-26/call5_full.sh ids_a.txt
