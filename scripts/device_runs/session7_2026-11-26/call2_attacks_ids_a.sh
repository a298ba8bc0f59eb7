# Device call 2 (nvidia-h100-x1), seventh session, harness 0.4.4: the GPU attack files at
# world size 1, then the first 50 references timed against themselves (ids_a.txt).
set -o pipefail
source scripts/device_runs/setup_gpu_machine.sh
t0=$(date +%s)
timeout 250 python3 -m pytest tests/engine/test_gpu_ws1_attacks.py -m gpu -s -q 2>&1 | grep -E "^\[ws1|passed|failed|Error|assert" | cut -c1-330 > $OUT/gpu_ws1_attacks.txt
cat $OUT/gpu_ws1_attacks.txt | cut -c1-250
echo "attacks: $(( $(date +%s) - t0 )) s"; t1=$(date +%s)
left=$(( 585 - (t1 - t0) ))
timeout $left python3 scripts/self_timing.py --device cuda --world-size 1 --evals 1 --trials 2 --budget-s $((left-45)) \
  --ids $(cat scripts/device_runs/freeze_2026-11-26/ids_a.txt) --out $OUT --tag _ws1_0.4.4_ids_a 2>&1 | grep -E "#0: " | cut -c1-150
echo "self-timing: $(( $(date +%s) - t1 )) s"
