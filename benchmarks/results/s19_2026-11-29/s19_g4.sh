# Session 19, call 4 (1 x H200): three spares of each kind (paces.SPARES). Every built-in
# reference against itself at ws 1 (g3, two of each: 62 of 99 matched, 96 within 0.97-1.03),
# then bench_eval ws 1 1024x1024 x10 (g3: 1.147, intervals overlapping in 45 of 45 pairs).
set -o pipefail
source scripts/device/setup_gpu_machine.sh > /dev/null 2>&1
t0=$(date +%s); T(){ echo "[$(( $(date +%s) - t0 ))s] $*"; }
R=$OUT/g4; mkdir -p $R; cp .calls/commit.txt $R/
timeout 400 python3 scripts/self_timing.py --device cuda --world-size 1 --evals 1 --trials 2 --budget-s 380 --cache-dir /tmp/st1 --out $R --tag _ws1_spares3 > $R/self_timing.log 2>&1
T "self_timing rc=$?"; tail -1 $R/self_timing.log | cut -c1-300
grep -iE "incorrect|harness_error|failure|FAIL" $R/self_timing.log | head -20 | cut -c1-250
free -g | head -2
timeout 120 python3 scripts/bench_eval.py --device cuda --world-size 1 --repeats 10 --shapes 1024x1024 --out $R --tag _ws1_spares3 > $R/bench_eval.log 2>&1
T "bench_eval 1024 x10 rc=$?"; grep -E "^\| [0-9]" $R/bench_eval_cuda_ws1_spares3.md
python3 scripts/timing_spread.py $R/bench_eval_cuda_ws1_spares3.json | tail -1
cd $OUT && tar czf g4.tgz g4 && rm -rf g4
