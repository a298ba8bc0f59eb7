# Session 19, call 1 (1 x H200, the only kind lent): the node's pace pairing (node/paces.py)
# on a GPU. bench_eval at ws 1, 1024x1024 x10 twice, 8192x8192 x6; before pairing the 1024
# spread was 1.126-1.160 (s18 g1, g13). Then the world-size-1 GPU tests.
set -o pipefail
source scripts/device/setup_gpu_machine.sh > /dev/null 2>&1
t0=$(date +%s); T(){ echo "[$(( $(date +%s) - t0 ))s] $*"; }
R=$OUT/g1; mkdir -p $R; cp .calls/commit.txt $R/
for n in a b; do
  timeout 150 python3 scripts/bench_eval.py --device cuda --world-size 1 --repeats 10 --shapes 1024x1024 --out $R --tag _ws1_matched_$n > $R/bench_eval_$n.log 2>&1
  T "bench_eval 1024 x10 ($n) rc=$?"; grep -E "^\| [0-9]" $R/bench_eval_cuda_ws1_matched_$n.md
  python3 scripts/timing_spread.py $R/bench_eval_cuda_ws1_matched_$n.json > $R/spread_$n.txt 2>&1; tail -16 $R/spread_$n.txt | cut -c1-180
done
timeout 120 python3 scripts/bench_eval.py --device cuda --world-size 1 --repeats 6 --shapes 8192x8192 --out $R --tag _ws1_matched_8k > $R/bench_eval_8k.log 2>&1
T "bench_eval 8192 x6 rc=$?"; grep -E "^\| [0-9]" $R/bench_eval_cuda_ws1_matched_8k.md
timeout 200 python3 -m pytest -q -ra -m gpu tests/engine/test_gpu_ws1.py tests/engine/test_gpu_ws1_attacks.py --durations=8 > $R/pytest_ws1.log 2>&1
T "pytest ws1 rc=$?"; tail -12 $R/pytest_ws1.log | cut -c1-200
