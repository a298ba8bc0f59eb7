# Session 17, single-GPU call (1 x H200; only kind lent): harness 0.5.4 at world size 1 — the
# world-size-1 GPU tests, bench_eval x5, then every reference against itself in what is left.
set -o pipefail
source scripts/device/setup_gpu_machine.sh > /dev/null 2>&1
t0=$(date +%s); T(){ echo "[$(( $(date +%s) - t0 ))s] $*"; }; left(){ echo $(( 580 - ($(date +%s) - t0) )); }
R=/tmp/resg1; mkdir -p $R; git rev-parse --short HEAD > $R/commit.txt 2>/dev/null || cp .calls/commit.txt $R/
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm --format=csv > $R/gpu.txt 2>&1
timeout 200 python3 -m pytest -q -ra -m gpu tests/engine/test_gpu_ws1.py tests/engine/test_gpu_ws1_attacks.py --durations=8 > $R/pytest_ws1.log 2>&1
T "pytest ws1 rc=$?"; tail -12 $R/pytest_ws1.log | cut -c1-200
timeout 150 python3 scripts/bench_eval.py --device cuda --world-size 1 --repeats 5 --out $R --tag _ws1_s17 > $R/bench_eval.log 2>&1
T "bench_eval rc=$?"; grep -E "^\| [0-9]" $R/bench_eval_cuda_ws1_s17.md
b=$(( $(left) - 25 )); [ $b -gt 60 ] && { timeout $(( b + 20 )) python3 scripts/self_timing.py --device cuda --world-size 1 --evals 1 --trials 2 --budget-s $b --cache-dir /tmp/st1 --out $R --tag _ws1_s17 > $R/self_timing.log 2>&1; T "self_timing rc=$?"; tail -3 $R/self_timing.log | cut -c1-300; }
tar czf $OUT/s17_g1.tgz -C $R .
