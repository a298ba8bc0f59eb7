# Session 14, call 2 (2 x H200): self-timing half A at ws 2, harness 0.5.2 (issue 37, 42).
set -o pipefail
source scripts/device/setup_gpu_machine.sh > /dev/null 2>&1
t0=$(date +%s); T(){ echo "[$(( $(date +%s) - t0 ))s] $*"; }
R=/tmp/res2; mkdir -p $R; cp .calls/commit.txt $R/
timeout 560 python3 scripts/self_timing.py --device cuda --world-size 2 --evals 1 --trials 2 --budget-s 520 --ids $(cat .calls/st_a.txt) --cache-dir /tmp/st --out $R --tag _ws2_a > $R/st_a.log 2>&1
T "self-timing A rc=$?"; tail -12 $R/st_a.log | cut -c1-300
tar czf $OUT/s14_call2.tgz -C $R .
