# Session 18, call 14 (1 x H200): bench_eval at 1024x1024, ws 1, x10 with the node pairing
# spares by their workers' paces (node/paces.py). Before: max/min 1.16 (g13, 8 evaluations).
set -o pipefail
source scripts/device/setup_gpu_machine.sh > /dev/null 2>&1
R=$OUT/g14; mkdir -p $R; cp .calls/commit.txt $R/
timeout 130 python3 scripts/bench_eval.py --device cuda --world-size 1 --repeats 10 --shapes 1024x1024 --out $R --tag _ws1_matched > $R/bench_eval.log 2>&1
echo "bench_eval rc=$?"; grep -E "^\| [0-9]" $R/bench_eval_cuda_ws1_matched.md | head -1; tail -2 $R/bench_eval.log | cut -c1-200
