# Session 16, call 3 (4 x H200): the GPU suite once with the world-size-1 tests grouped
# (issue 37: is a run now short enough for three in one call?), then the upstream references
# not reached in call 1 against themselves at ws 2 (issue 42), half on each GPU pair.
set -o pipefail
source scripts/device/setup_gpu_machine.sh > /dev/null 2>&1
t0=$(date +%s); T(){ echo "[$(( $(date +%s) - t0 ))s] $*"; }; left(){ echo $(( ${END_S:-495} - ($(date +%s) - t0) )); }
R=/tmp/res3; mkdir -p $R; cp .calls/commit.txt $R/
OUT=$R RUNS=1 TOTAL_S=215 bash scripts/device/pytest_gpu.sh
T "pytest_gpu rc=$?"; tail -2 $R/pytest_gpu.md; grep -h -E "^FAILED|^ERROR" $R/pytest_gpu_run*.log | cut -c1-200 | head
L=$(left)
if [ $L -gt 80 ]; then
  for h in a b; do
    g=$([ $h = a ] && echo 0,1 || echo 2,3)
    CUDA_VISIBLE_DEVICES=$g timeout $L python3 scripts/self_timing.py --device cuda --world-size 2 --evals 1 --trials 2 --budget-s $(( L - 35 )) --source pkb:$PWD/.devtools/pkb_upstream --ids $(cat .calls/pkb_rest_$h.txt) --cache-dir /tmp/st_$h --out $R --tag _ws2_pkb_rest_$h > $R/st_pkb_$h.log 2>&1 &
  done
  wait; T "upstream rest"; tail -1 $R/st_pkb_a.log | cut -c1-200; tail -1 $R/st_pkb_b.log | cut -c1-200
fi
tar czf $OUT/s16_call3.tgz -C $R .
