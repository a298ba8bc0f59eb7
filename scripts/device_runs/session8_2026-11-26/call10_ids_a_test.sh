# Device calls 10 and 11 (nvidia-h100-x1, one machine), eighth session, harness 0.4.9: the GPU
# tests of host-waiting calls' batches, then half of the references against themselves
# (call5_full.sh ids_a.txt); call 11: `bash call5_full.sh ids_b.txt`.
set -o pipefail
source scripts/device_runs/setup_gpu_machine.sh
t0=$(date +%s)
timeout 150 python3 -m pytest -q -m gpu tests/engine/test_gpu_ws1.py -x -k "host or gate" 2>&1 | tail -3
echo "tests: $(( $(date +%s) - t0 )) s"
bash scripts/device_runs/session8_2026-11-26/call5_full.sh ids_a.txt
