# Device call 14 (nvidia-h100-x1), eighth session, harness 0.4.9 (the head of this stop): the
# GPU attacks and engine tests at world size 1.
set -o pipefail
source scripts/device_runs/setup_gpu_machine.sh
t0=$(date +%s)
timeout 400 python3 -m pytest -q -m gpu tests/engine/test_gpu_ws1_attacks.py tests/engine/test_gpu_ws1.py -rA 2>&1 | grep -E "PASSED|FAILED|ERROR|passed|failed" | cut -c1-160 | tail -25
echo "tests: $(( $(date +%s) - t0 )) s"
