# Device call A: bench_eval before (9c78ee4) and after, world size 1, same machine.
set -o pipefail
source .baseline/setup.sh
R=$PWD
echo "== base bench_eval ws1 (9c78ee4)"
(cd /tmp/base && PYTHONPATH=/tmp/site:/tmp/base timeout 280 python3 scripts/bench_eval.py --device cuda --world-size 1 --repeats 5 --out $OUT/base --tag _ws1_base 2>&1 | grep -v "^\[rank" | grep "^|\|max/min" | tail -8)
echo "== new bench_eval ws1"
PYTHONPATH=/tmp/site:$R timeout 290 python3 scripts/bench_eval.py --device cuda --world-size 1 --repeats 5 --out $OUT/new --tag _ws1 2>&1 | grep -v "^\[rank" | grep "^|\|max/min\|#" | cut -c1-250 | tail -20
