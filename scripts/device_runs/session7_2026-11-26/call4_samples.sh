# Device call 4 (nvidia-h100-x1), seventh session, harness 0.4.4: per-sample figures of the
# noisy references (host-waiting, data-dependent work), to compare two speedup estimators on
# the same samples: the ratio of the halves' medians (the verdict's) and the median of each
# pair's ratio. Diagnostic only: verdict.py is patched on the device to write every
# evaluation's figures (reference, candidate ms per call, paired by sample) to a file
# (dump_samples.py; as run, the script carried the same patch inline).
set -o pipefail
source scripts/device_runs/setup_gpu_machine.sh
python3 scripts/device_runs/session7_2026-11-26/dump_samples.py
grep -n "PKB_SAMPLES_DUMP" pkb_ray/engine/verdict.py
export PKB_SAMPLES_DUMP=$OUT/samples.jsonl
t0=$(date +%s)
timeout 330 python3 scripts/self_timing.py --device cuda --world-size 1 --evals 1 --trials 2 --budget-s 300 \
  --ids $(cat scripts/device_runs/session7_2026-11-26/noisy.txt) --out $OUT --tag _ws1_0.4.4_noisy 2>&1 | grep -E "#0: " | cut -c1-120
echo "self-timing: $(( $(date +%s) - t0 )) s"; wc -l $OUT/samples.jsonl
