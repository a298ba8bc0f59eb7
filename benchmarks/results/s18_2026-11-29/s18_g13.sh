# Session 18, call 13 (1 x H200): bench_eval at 1024x1024, ws 1, x8 with each worker's context
# pace recorded: does the pace ratio of the two workers follow the events' ratio per evaluation?
set -o pipefail
source scripts/device/setup_gpu_machine.sh > /dev/null 2>&1
R=$OUT/g13; mkdir -p $R; cp .calls/commit.txt $R/
timeout 150 python3 scripts/bench_eval.py --device cuda --world-size 1 --repeats 8 --shapes 1024x1024 --out $R --tag _ws1_pace > $R/bench_eval.log 2>&1
echo "bench_eval rc=$?"; grep -E "^\| [0-9]" $R/bench_eval_cuda_ws1_pace.md; tail -2 $R/bench_eval.log | cut -c1-300
