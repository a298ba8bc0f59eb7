# Device call B: pkb eval spread of the allreduce expert, trust checks on CUDA (no false refusals).
set -o pipefail
source .baseline/setup.sh
R=$PWD
export PYTHONPATH=/tmp/site:$R
mkdir -p $OUT/trust
echo "== allreduce expert x5 (pkb eval, ws1)"
for i in 1 2 3 4 5; do timeout 100 python3 -m pkb_ray.cli eval allreduce problems/allreduce/expert.py --device cuda --world-size 1 --json 2>/dev/null | tail -1 > $OUT/trust/expert_allreduce_$i.json; python3 -c "import json;d=json.load(open('$OUT/trust/expert_allreduce_$i.json'));print(d['correct'],d['failure'],round(d['candidate_ms'],5),round(d['reference_ms'],5),d['speedup'],d['speedup_ci_low'],d['speedup_ci_high'],round(d['node_seconds'],1),d['timing']['stopped'])"; done
echo "== shipped experts, ws1"
for p in allgather reduce_scatter broadcast alltoall; do timeout 100 python3 -m pkb_ray.cli eval $p problems/$p/expert.py --device cuda --world-size 1 --json 2>/dev/null | tail -1 > $OUT/trust/expert_$p.json; python3 -c "import json;d=json.load(open('$OUT/trust/expert_$p.json'));print('$p',d['correct'],d['failure'],d['speedup'],(d['message'] or '')[:160])"; done
echo "== torch symmetric-memory ops wrapped for our contracts, ws1"
for pc in allreduce:allreduce_one_shot allgather_gemm:allgather_gemm_fused gemm_reduce_scatter:gemm_reduce_scatter_fused; do p=${pc%%:*}; c=${pc##*:}; timeout 100 python3 -m pkb_ray.cli eval $p tests/engine/fixtures/candidates/torch_symm/$c.py --device cuda --world-size 1 --json 2>/dev/null | tail -1 > $OUT/trust/symm_$c.json; python3 -c "import json;d=json.load(open('$OUT/trust/symm_$c.json'));print('$c',d['correct'],d['failure'],d['speedup'],(d['message'] or '')[:160])"; done
echo "== seccomp probe"; timeout 120 python3 scripts/device_runs/trust_v2/seccomp_symm_probe.py 2>&1 | tail -8
echo "== leftovers in TMPDIR"; ls /tmp | grep -c "^pkb_" || true
