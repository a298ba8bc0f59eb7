# Device calls 5-6 (harness 0.4.7) and 8-9 (0.4.8), nvidia-h100-x1, eighth session: every reference timed
# against itself at world size 1, half per call: `bash call5_full.sh ids_a.txt` then `ids_b.txt`;
# each evaluation's samples dumped (dump_samples.py, applied on the device only).
set -o pipefail
source scripts/device_runs/setup_gpu_machine.sh
D=scripts/device_runs/session7_2026-11-26  # dump_samples.py lives there
python3 $D/dump_samples.py
export PKB_SAMPLES_DUMP=$OUT/samples_$(basename $1 .txt).jsonl
V=$(python3 -c 'from pkb_ray.engine.version import HARNESS_VERSION as v; print(v)')
t0=$(date +%s)
timeout 580 python3 scripts/self_timing.py --device cuda --world-size 1 --evals 1 --trials 2 --budget-s 540 \
  --ids $(cat scripts/device_runs/freeze_2026-11-26/$1) --out $OUT --tag _ws1_${V}_$(basename $1 .txt) 2>&1 | grep -E "#0: " | cut -c1-110
echo "self-timing: $(( $(date +%s) - t0 )) s"
