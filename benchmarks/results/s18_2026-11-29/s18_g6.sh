# Session 18, call 6 (1 x H200): judges polling their socket for 20 ms before sleeping, against
# not, alternated, 1024x1024 ws 1 (the windows' noise is on the host path).
set -o pipefail
source scripts/device/setup_gpu_machine.sh > /dev/null 2>&1
t0=$(date +%s); T(){ echo "[$(( $(date +%s) - t0 ))s] $*"; }
R=$OUT/g6; mkdir -p $R; cp .calls/commit.txt $R/
for v in s0a:0 s20a:20 s0b:0 s20b:20; do
  tag=${v%%:*}; ms=${v##*:}
  PKB_EXPERIMENT_SPIN_MS=$ms timeout 110 python3 scripts/bench_eval.py --device cuda --world-size 1 --repeats 6 --shapes 1024x1024 --out $R --tag _ws1_$tag > $R/bench_eval_$tag.log 2>&1
  T "bench_eval $tag rc=$?"; grep -E "^\| [0-9]" $R/bench_eval_cuda_ws1_$tag.md
done
