# Session 18, call 4 (1 x H200): at 1024x1024, ws 1, 64 calls a sample (default), then 128, then
# 64 again: does a longer batch narrow the spread between evaluations at the same cost?
set -o pipefail
source scripts/device/setup_gpu_machine.sh > /dev/null 2>&1
t0=$(date +%s); T(){ echo "[$(( $(date +%s) - t0 ))s] $*"; }
R=$OUT/g4; mkdir -p $R; cp .calls/commit.txt $R/
for v in k64a:64 k128:128 k64b:64 k128b:128; do
  tag=${v%%:*}; k=${v##*:}
  timeout 120 python3 scripts/bench_eval.py --device cuda --world-size 1 --repeats 6 --shapes 1024x1024 --timing max_batch_calls=$k --out $R --tag _ws1_$tag > $R/bench_eval_$tag.log 2>&1
  T "bench_eval $tag rc=$?"; grep -E "^\| [0-9]" $R/bench_eval_cuda_ws1_$tag.md
done
