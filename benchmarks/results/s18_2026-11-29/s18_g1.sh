# Session 18, call 1 (1 x H200, the only kind lent): per-sample windows of bench_eval at ws 1
# (the 1024x1024 spread is as large at ws 1 as at ws 2: 1.06-1.09), default and with a longer
# max_timing_s; then the world-size-1 GPU tests on harness 0.5.5.
set -o pipefail
source scripts/device/setup_gpu_machine.sh > /dev/null 2>&1
t0=$(date +%s); T(){ echo "[$(( $(date +%s) - t0 ))s] $*"; }
R=$OUT/g1; mkdir -p $R; cp .calls/commit.txt $R/
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm --format=csv > $R/gpu.txt 2>&1
timeout 130 python3 scripts/bench_eval.py --device cuda --world-size 1 --repeats 8 --shapes 1024x1024 8192x8192 --out $R --tag _ws1_s18 > $R/bench_eval.log 2>&1
T "bench_eval default rc=$?"; grep -E "^\| [0-9]" $R/bench_eval_cuda_ws1_s18.md
timeout 110 python3 scripts/bench_eval.py --device cuda --world-size 1 --repeats 6 --shapes 1024x1024 --timing max_timing_s=6 --out $R --tag _ws1_s18_t6 > $R/bench_eval_t6.log 2>&1
T "bench_eval max_timing_s=6 rc=$?"; grep -E "^\| [0-9]" $R/bench_eval_cuda_ws1_s18_t6.md
timeout 240 python3 -m pytest -q -ra -m gpu tests/engine/test_gpu_ws1.py tests/engine/test_gpu_ws1_attacks.py --durations=8 > $R/pytest_ws1.log 2>&1
T "pytest ws1 rc=$?"; tail -12 $R/pytest_ws1.log | cut -c1-200
