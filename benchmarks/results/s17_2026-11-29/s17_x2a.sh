# Session 17, call A (2 x H200): the 23 upstream problems not correct or not reached in s16,
# at ws 2, after the fixes of 60fa8f2..(groups, layers, sparse, in-place answers, exact arena);
# then bench_eval x5 at ws 2 (issue 37).
set -o pipefail
source scripts/device/setup_gpu_machine.sh > /dev/null 2>&1
t0=$(date +%s); T(){ echo "[$(( $(date +%s) - t0 ))s] $*"; }; left(){ echo $(( 575 - ($(date +%s) - t0) )); }
R=/tmp/resa; mkdir -p $R; git rev-parse --short HEAD > $R/commit.txt 2>/dev/null || cp .calls/commit.txt $R/
nvidia-smi --query-gpu=name,memory.total --format=csv > $R/gpu.txt 2>&1; T "setup"
ids=$(cat .calls/pkb_redo_s17.txt)
timeout 380 python3 scripts/self_timing.py --device cuda --world-size 2 --evals 1 --trials 2 --budget-s 300 --source pkb:$PWD/.devtools/pkb_upstream --ids $ids --cache-dir /tmp/st_a --out $R --tag _ws2_pkb_redo_s17 > $R/st.log 2>&1
T "upstream redo rc=$?"; tail -2 $R/st.log | cut -c1-300
tar czf $OUT/s17_x2a.tgz -C $R .
[ $(left) -gt 100 ] && { timeout $(( $(left) - 5 )) python3 scripts/bench_eval.py --device cuda --world-size 2 --repeats 5 --out $R --tag _ws2_s17 > $R/bench_eval.log 2>&1; T "bench_eval rc=$?"; grep -E "^\| [0-9]" $R/bench_eval_cuda_ws2_s17.md; }
tar czf $OUT/s17_x2a.tgz -C $R .
