# Device call 6 (nvidia-h100-x1), ninth session, harness 0.4.11 (the head): the GPU attacks and
# engine tests at world size 1, then every reference of ids_a against itself again (the
# second full run at 0.4.11; call 7 runs ids_b).
set -o pipefail
source scripts/device_runs/setup_gpu_machine.sh
t0=$(date +%s)
timeout 300 python3 -m pytest -q -m gpu tests/engine/test_gpu_ws1_attacks.py tests/engine/test_gpu_ws1.py -rA -p no:cacheprovider 2>&1 | grep -E "PASSED|FAILED|ERROR|passed|failed" | cut -c1-160 | tail -25 | tee $OUT/attacks_0.4.11.txt
echo "tests: $(( $(date +%s) - t0 )) s"
bash scripts/device_runs/session8_2026-11-26/call5_full.sh ids_a.txt
