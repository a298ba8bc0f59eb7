# Session 16, call 2 (4 x H200): the GPU suite three times in a row, spread over the two GPU
# pairs (issue 37); in the time left, the upstream references not reached in call 1 against
# themselves at ws 2 (issue 42), half on each pair.
set -o pipefail
source scripts/device/setup_gpu_machine.sh > /dev/null 2>&1
t0=$(date +%s); T(){ echo "[$(( $(date +%s) - t0 ))s] $*"; }; left(){ echo $(( 585 - ($(date +%s) - t0) )); }
R=/tmp/res2; mkdir -p $R; cp .calls/commit.txt $R/
OUT=$R RUNS=3 TOTAL_S=${TOTAL_S:-560} bash scripts/device/pytest_gpu.sh
T "pytest_gpu rc=$?"; tail -4 $R/pytest_gpu.md; grep -h -E "^FAILED|^ERROR" $R/pytest_gpu_run*.log | cut -c1-200 | head
L=$(left)
if [ $L -gt 80 ]; then
  for h in a b; do
    g=$([ $h = a ] && echo 0,1 || echo 2,3)
    CUDA_VISIBLE_DEVICES=$g timeout $L python3 scripts/self_timing.py --device cuda --world-size 2 --evals 1 --trials 2 --budget-s $(( L - 40 )) --source pkb:$PWD/.devtools/pkb_upstream --ids $(cat .calls/pkb_rest_$h.txt) --cache-dir /tmp/st_$h --out $R --tag _ws2_pkb_rest_$h > $R/st_pkb_$h.log 2>&1 &
  done
  wait; T "upstream rest"; tail -1 $R/st_pkb_a.log | cut -c1-200; tail -1 $R/st_pkb_b.log | cut -c1-200
fi
tar czf $OUT/s16_call2.tgz -C $R .
