# Session 14, call 6 (4 x H200): issue 40's throughput ratio again with sandboxes kept ahead per guard setting.
set -o pipefail
source scripts/device/setup_gpu_machine.sh > /dev/null 2>&1
t0=$(date +%s); T(){ echo "[$(( $(date +%s) - t0 ))s] $*"; }
R=/tmp/res6; mkdir -p $R; cp .calls/commit.txt $R/
timeout 235 python3 scripts/bench_groups_gpu.py --world-size 2 --repeats 1 --budget-s 215 --out $R > $R/groups.log 2>&1
T "groups rc=$?"; grep -E "throughput|within|phases that grew" $R/groups.log | cut -c1-300 | tail -12
tar czf $OUT/s14_call6.tgz -C $R .
