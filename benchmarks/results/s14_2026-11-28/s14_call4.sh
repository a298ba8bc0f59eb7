# Session 14, call 4 (4 x H200): issue 40's groups benchmark at ws 2 (throughput ratio,
# interference 3 exclusive + 3 grouped per problem).
set -o pipefail
source scripts/device/setup_gpu_machine.sh > /dev/null 2>&1
t0=$(date +%s); T(){ echo "[$(( $(date +%s) - t0 ))s] $*"; }
R=/tmp/res4; mkdir -p $R; cp .calls/commit.txt $R/; nvidia-smi -L > $R/gpus.txt; nproc >> $R/gpus.txt
timeout 500 python3 scripts/bench_groups_gpu.py --world-size 2 --repeats 3 --budget-s 470 --out $R > $R/groups.log 2>&1
T "groups rc=$?"; tail -40 $R/groups.log | cut -c1-220
tar czf $OUT/s14_call4.tgz -C $R .
