# Device call (nvidia-h100-x1): harness 0.4.3, every builtin reference that runs at world size
# 1 timed against itself, one evaluation each; `bash self_timing_all.sh ids_a.txt` (the first
# 50 of the 100) and `... ids_b.txt` (the other 50), in two calls of under 10 minutes.
set -o pipefail
source scripts/device_runs/setup_gpu_machine.sh
part=$(basename "$1" .txt)
t0=$(date +%s)
timeout 560 python3 scripts/self_timing.py --device cuda --world-size 1 --evals 1 --trials 2 --budget-s 500 \
  --ids "$(cat scripts/device_runs/freeze_2026-11-26/$1)" --out $OUT --tag _ws1_0.4.3_$part 2>&1 \
  | grep -E "#0: |within 3%" | cut -c1-150
echo "total: $(( $(date +%s) - t0 )) s"
