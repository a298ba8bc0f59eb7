# Session 15, call 3 (4 x H200): self-timing at ws 4, harness 0.5.2 (issues 37, 42), as far as it gets.
set -o pipefail
source scripts/device/setup_gpu_machine.sh > /dev/null 2>&1
t0=$(date +%s); T(){ echo "[$(( $(date +%s) - t0 ))s] $*"; }
R=/tmp/res3; mkdir -p $R; cp .calls/commit.txt $R/
B=${BUDGET:-500}
timeout $(( B + 60 )) python3 scripts/self_timing.py --device cuda --world-size 4 --evals 1 --trials 2 --budget-s $B --ids $(cat .calls/st_a.txt) --cache-dir /tmp/st --out $R --tag _ws4_a > $R/st_a.log 2>&1
T "self-timing ws4 A rc=$?"; tail -12 $R/st_a.log | cut -c1-300
tar czf $OUT/s15_call3.tgz -C $R .
