# Session 17, call B (2 x H200): bench_eval x5 at ws 2 with batch_ms 4 (k=8 at 8192x8192, where
# the default 1 ms gives k=2 against a 0.4 ms floor), the default, then 4 again (issue 37);
# then the upstream problems call A did not reach, 56 first (its groups made once now) (issue 42).
set -o pipefail
source scripts/device/setup_gpu_machine.sh > /dev/null 2>&1
t0=$(date +%s); T(){ echo "[$(( $(date +%s) - t0 ))s] $*"; }; left(){ echo $(( 560 - ($(date +%s) - t0) )); }
R=/tmp/resb; mkdir -p $R; cp .calls/commit.txt $R/
for v in b4:4 b1:1 b4r:4; do
  tag=${v%%:*}; ms=${v##*:}
  timeout 120 python3 scripts/bench_eval.py --device cuda --world-size 2 --repeats 5 --timing batch_ms=$ms --out $R --tag _ws2_$tag > $R/bench_eval_$tag.log 2>&1
  T "bench_eval $tag rc=$?"; grep -E "^\| [0-9]" $R/bench_eval_cuda_ws2_$tag.md
done
tar czf $OUT/s17_x2b.tgz -C $R .
ids=$(cat .calls/pkb_redo_s17b.txt); b=$(( $(left) - 70 ))
timeout $(( b + 60 )) python3 scripts/self_timing.py --device cuda --world-size 2 --evals 1 --trials 2 --budget-s $b --source pkb:$PWD/.devtools/pkb_upstream --ids $ids --cache-dir /tmp/st_b --out $R --tag _ws2_pkb_redo_s17b > $R/st.log 2>&1
T "upstream rest rc=$?"; grep -E "^pkb_" $R/st.log | cut -c1-160
tar czf $OUT/s17_x2b.tgz -C $R .
