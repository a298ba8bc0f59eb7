# Session 18, call 12 (1 x H200): every built-in reference against itself at ws 1 on harness
# 0.5.5 (integers compared exactly since 0.5.4, never run on a GPU over the whole suite).
set -o pipefail
source scripts/device/setup_gpu_machine.sh > /dev/null 2>&1
R=$OUT/g12; mkdir -p $R; cp .calls/commit.txt $R/
timeout 470 python3 scripts/self_timing.py --device cuda --world-size 1 --evals 1 --trials 2 --budget-s 430 --cache-dir /tmp/st1 --out $R --tag _ws1_s18 > $R/self_timing.log 2>&1
echo "self_timing rc=$?"; tail -6 $R/self_timing.log | cut -c1-300
grep -iE "incorrect|harness_error|failure|FAIL" $R/self_timing.log | head -20 | cut -c1-250
