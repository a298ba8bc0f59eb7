# Session 14, call 5 (4 x H200): issue 40's representative sweeps at ws 2 then ws 4, MLflow on SQLite.
set -o pipefail
t0=$(date +%s); T(){ echo "[$(( $(date +%s) - t0 ))s] $*"; }
R=/tmp/res5; mkdir -p $R; cp .calls/commit.txt $R/
OUT_SAVE=$OUT
OUT=$R SWEEP_TIMEOUT_S=${SW_S:-130} bash scripts/device/sweep_gpu.sh > $R/sweep.log 2>&1
T "sweep rc=$?"; grep -E "^===|exit|co_tenancy|co-tenancy|geomean|total" $R/sweep.log | cut -c1-200 | tail -40
tar czf $OUT_SAVE/s14_call5.tgz -C $R .
