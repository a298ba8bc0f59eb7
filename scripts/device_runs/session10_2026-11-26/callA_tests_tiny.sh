# Device call A (nvidia-h100-x1), tenth session, harness 0.4.11: the GPU engine tests and
# attacks at the head (tests/engine/test_gpu_ws1.py's helper is new), then a 12 us kernel's
# time in fresh processes outside the harness (tiny_kernel_spread.py).
# Not run in the tenth session: 174 s of device time were left, too few to start a machine.
set -o pipefail
mkdir -p .devsite && cp .devsite_slim/site-py312.tgz .devsite/
source scripts/device_runs/setup_gpu_machine.sh
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit --format=csv
t0=$(date +%s)
timeout 330 python3 -m pytest -q -m gpu tests/engine/test_gpu_ws1_attacks.py tests/engine/test_gpu_ws1.py -rA -p no:cacheprovider 2>&1 | grep -E "PASSED|FAILED|ERROR|passed|failed" | cut -c1-160 | tail -25 | tee $OUT/gpu_tests_0.4.11.txt
echo "tests: $(( $(date +%s) - t0 )) s"
timeout 200 python3 scripts/device_runs/session10_2026-11-26/tiny_kernel_spread.py 6 2>&1 | tee $OUT/tiny_kernel_spread.txt
