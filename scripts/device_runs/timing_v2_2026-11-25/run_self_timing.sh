set -o pipefail
source .baseline/setup.sh
R=$PWD
export PYTHONPATH=/tmp/site:$R
echo "== self_timing part $PART"
timeout ${ST_S:-540} python3 scripts/self_timing.py --device cuda --world-size 1 --evals 1 --trials 2 --budget-s ${BUDGET:-480} --ids "$(cat .baseline/ids$PART.txt)" --out $OUT/new --tag "_ws1_part$PART" 2>&1 | grep -v "^\[rank" | cut -c1-200 | tail -70
