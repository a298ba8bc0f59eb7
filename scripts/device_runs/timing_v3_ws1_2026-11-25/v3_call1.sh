# Device call 1 (session 4): node-seconds breakdown at ws1, two timing caps, then references.
set -o pipefail
source .baseline/setup.sh
R=$PWD
export PYTHONPATH=/tmp/site:$R
t0=$(date +%s)
timeout 200 python3 scripts/bench_eval.py --device cuda --world-size 1 --repeats 5 --out $OUT --tag _ws1_v3 2>&1 | grep -v "^\[rank" | grep "^|\|max/min" | cut -c1-220 | tail -4
echo "bench default: $(( $(date +%s) - t0 )) s"; t1=$(date +%s)
timeout 170 python3 scripts/bench_eval.py --device cuda --world-size 1 --repeats 5 --out $OUT --tag _ws1_v3_cap1 --timing max_timing_s=1.0 2>&1 | grep -v "^\[rank" | grep "^|\|max/min" | cut -c1-220 | tail -4
echo "bench cap1: $(( $(date +%s) - t1 )) s"; t2=$(date +%s)
left=$(( 570 - (t2 - t0) ))
timeout $left python3 scripts/self_timing.py --device cuda --world-size 1 --evals 1 --trials 2 --budget-s $((left-45)) --ids $(cat .baseline/idsC1.txt) --out $OUT/full --tag _ws1_partC1 2>&1 | grep -v "^\[rank" | grep "#0:" | cut -c1-200
echo "self-timing: $(( $(date +%s) - t2 )) s"
