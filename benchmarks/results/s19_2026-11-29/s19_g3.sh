# Session 19, call 3 (1 x H200): harness 0.5.7 (stand-in outputs per call; intervals widened by
# a time per call). bench_eval ws 1 1024x1024 x10: do its intervals overlap (held out of the
# LAUNCH_SD_US fit)? Then every built-in reference against itself at ws 1 (s18 g12 at 0.5.5:
# 99 of 99 correct, 96 within 0.97-1.03).
set -o pipefail
source scripts/device/setup_gpu_machine.sh > /dev/null 2>&1
t0=$(date +%s); T(){ echo "[$(( $(date +%s) - t0 ))s] $*"; }
R=$OUT/g3; mkdir -p $R; cp .calls/commit.txt $R/
timeout 120 python3 scripts/bench_eval.py --device cuda --world-size 1 --repeats 10 --shapes 1024x1024 --out $R --tag _ws1_057 > $R/bench_eval.log 2>&1
T "bench_eval 1024 x10 rc=$?"; grep -E "^\| [0-9]" $R/bench_eval_cuda_ws1_057.md
python3 scripts/timing_spread.py $R/bench_eval_cuda_ws1_057.json | tail -1
timeout 440 python3 scripts/self_timing.py --device cuda --world-size 1 --evals 1 --trials 2 --budget-s 400 --cache-dir /tmp/st1 --out $R --tag _ws1_057 > $R/self_timing.log 2>&1
T "self_timing rc=$?"; tail -3 $R/self_timing.log | cut -c1-300
grep -iE "incorrect|harness_error|failure|FAIL" $R/self_timing.log | head -20 | cut -c1-250
cd $OUT && tar czf g3.tgz g3 && rm -rf g3
