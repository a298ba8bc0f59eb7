# Session 14, call 2 (2 x H200): self-timing half B at ws 2, harness 0.5.2 (issue 37, 42).
set -o pipefail
source scripts/device/setup_gpu_machine.sh > /dev/null 2>&1
t0=$(date +%s); T(){ echo "[$(( $(date +%s) - t0 ))s] $*"; }
R=/tmp/res3; mkdir -p $R; cp .calls/commit.txt $R/
timeout 560 python3 scripts/self_timing.py --device cuda --world-size 2 --evals 1 --trials 2 --budget-s 520 --ids $(cat .calls/st_b.txt) --cache-dir /tmp/st --out $R --tag _ws2_b > $R/st_b.log 2>&1
T "self-timing B rc=$?"; tail -12 $R/st_b.log | cut -c1-300
tar czf $OUT/s14_call3.tgz -C $R .
