# Session 15, call 1 (4 x H200): issue 44's mixed sweep on the node's shared actor.
set -o pipefail
t0=$(date +%s); T(){ echo "[$(( $(date +%s) - t0 ))s] $*"; }
R=/tmp/res1; mkdir -p $R; cp .calls/commit.txt $R/; nvidia-smi -L > $R/gpus.txt; nproc
OUT_SAVE=$OUT
OUT=$R MIXED_TIMEOUT_S=520 bash scripts/device/mixed_sweep_gpu.sh > $R/mixed.log 2>&1
T "mixed sweep rc=$?"; tail -40 $R/mixed.log | cut -c1-260
cp $R/mixed_sweep.tgz $OUT_SAVE/ 2>/dev/null; cp $R/mixed.log $R/commit.txt $R/gpus.txt $OUT_SAVE/
