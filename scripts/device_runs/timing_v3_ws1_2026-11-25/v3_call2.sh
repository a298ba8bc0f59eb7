# Device call 2 (session 4): after warm-up by time; the rest of the references; experts.
set -o pipefail
source .baseline/setup.sh
R=$PWD
export PYTHONPATH=/tmp/site:$R
t0=$(date +%s)
timeout 170 python3 scripts/bench_eval.py --device cuda --world-size 1 --repeats 5 --out $OUT --tag _ws1_v3b 2>&1 | grep -v "^\[rank" | grep "^|\|max/min" | cut -c1-220 | tail -4
echo "bench: $(( $(date +%s) - t0 )) s"; t1=$(date +%s)
mkdir -p $OUT/experts
for c in allreduce:problems/allreduce/expert.py allgather:problems/allgather/expert.py reduce_scatter:problems/reduce_scatter/expert.py alltoall:problems/alltoall/expert.py broadcast:problems/broadcast/expert.py allreduce:tests/engine/fixtures/candidates/torch_symm/allreduce_one_shot.py allgather_gemm:tests/engine/fixtures/candidates/torch_symm/allgather_gemm_fused.py gemm_reduce_scatter:tests/engine/fixtures/candidates/torch_symm/gemm_reduce_scatter_fused.py; do
  p=${c%%:*}; f=${c#*:}; n=$(basename $f .py)
  timeout 120 python3 -m pkb_ray.cli eval $p $f --world-size 1 --json 2>/dev/null | tail -1 > $OUT/experts/${p}__$n.json
  python3 -c "
import json,sys; d=json.load(open('$OUT/experts/${p}__$n.json'))
print('$p $n', d.get('correct'), d.get('failure'), 'speedup', d.get('speedup'), 'node_s', round(d.get('node_seconds') or 0,2), (d.get('message') or '')[:120])" 2>/dev/null || echo "$p $n: no result"
done
echo "experts: $(( $(date +%s) - t1 )) s"; t2=$(date +%s)
left=$(( 575 - (t2 - t0) ))
timeout $left python3 scripts/self_timing.py --device cuda --world-size 1 --evals 1 --trials 2 --budget-s $((left-40)) --ids $(cat .baseline/idsC2.txt) --out $OUT/full --tag _ws1_partC2 2>&1 | grep -v "^\[rank" | grep "#0:" | cut -c1-160
echo "self-timing: $(( $(date +%s) - t2 )) s"
