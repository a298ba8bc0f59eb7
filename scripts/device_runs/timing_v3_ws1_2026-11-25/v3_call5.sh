# Device call 5 (session 4): node-seconds before (9c78ee4) and after, on one machine.
set -o pipefail
source .baseline/setup.sh
R=$PWD
export PYTHONPATH=/tmp/site:$R
t0=$(date +%s)
echo "== base bench_eval ws1 (9c78ee4)"
(cd /tmp/base && PYTHONPATH=/tmp/site:/tmp/base timeout 200 python3 scripts/bench_eval.py --device cuda --world-size 1 --repeats 5 --out $OUT/base --tag _ws1_base_v3 2>&1 | grep -v "^\[rank" | grep "^|\|max/min" | tail -3)
echo "base: $(( $(date +%s) - t0 )) s"; t1=$(date +%s)
echo "== this tree"
timeout 200 python3 scripts/bench_eval.py --device cuda --world-size 1 --repeats 5 --out $OUT --tag _ws1_v3e 2>&1 | grep -v "^\[rank" | grep "^|\|max/min" | cut -c1-220 | tail -3
echo "new: $(( $(date +%s) - t1 )) s"
