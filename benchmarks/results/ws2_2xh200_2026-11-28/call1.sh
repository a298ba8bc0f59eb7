# Session 13, call 1 (2 x H200): issue 44's tool episode at ws 2, then issue 43's
# `python3 sweep.py eval.world_size=2` (model=expert: every problem with an expert) into MLflow.
set -o pipefail
t0=$(date +%s); T(){ echo "[$(( $(date +%s) - t0 ))s] $*"; }
nvidia-smi -L; nproc
R=/tmp/res1; mkdir -p $R; cp .calls/commit.txt $R/
OUT_SAVE=$OUT
OUT=$R EPISODE_TIMEOUT_S=270 bash scripts/device/tool_episode_gpu.sh > $R/tool_episode.log 2>&1
T "tool episode rc=$?"; tail -45 $R/tool_episode.log | cut -c1-240
OUT=$R PROBLEMS=auto WORLD_SIZES=2 SWEEP_TIMEOUT_S=$(( 570 - ($(date +%s) - t0) )) bash scripts/device/sweep_gpu.sh > $R/sweep.log 2>&1
T "sweep rc=$?"; tail -50 $R/sweep.log | cut -c1-220
tar czf $OUT_SAVE/s13_call1.tgz -C $R .
