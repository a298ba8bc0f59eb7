# Session 15, call 2 (4 x H200): issue 43's expert sweep at ws 4 (harness 0.5.2), then issue 40's
# throughput ratio after 4a326b2 (sandboxes started from the node's own thread).
set -o pipefail
t0=$(date +%s); T(){ echo "[$(( $(date +%s) - t0 ))s] $*"; }
R=/tmp/res2; mkdir -p $R; cp .calls/commit.txt $R/
OUT_SAVE=$OUT
OUT=$R PROBLEMS=auto WORLD_SIZES=4 SWEEP_TIMEOUT_S=250 bash scripts/device/sweep_gpu.sh > $R/sweep.log 2>&1
T "sweep ws4 rc=$?"; grep -E "geomean|cells|exit" $R/sweep.log | head -6 | cut -c1-220
source scripts/device/setup_gpu_machine.sh > /dev/null 2>&1
left=$(( 560 - ($(date +%s) - t0) ))
timeout $left python3 scripts/bench_groups_gpu.py --world-size 2 --repeats 1 --budget-s $(( left - 20 )) --out $R > $R/groups.log 2>&1
T "groups rc=$?"; grep -E "throughput|within" $R/groups.log | cut -c1-300 | tail -8
tar czf $OUT_SAVE/s15_call2.tgz -C $R .
