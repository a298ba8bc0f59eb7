# Device call: GPU groups at world size 1 on one GPU, before (49cd674) and after.
set -o pipefail
source .baseline/setup.sh
R=$PWD
mkdir -p /tmp/pre && [ -f /tmp/pre/.ok ] || { tar xzf .baseline/pregroups.tgz -C /tmp/pre && touch /tmp/pre/.ok; }
run_eval() {  # $1 tree, $2 label
  for p in allreduce allgather; do for k in 1 2; do
    (cd $1 && PYTHONPATH=/tmp/site:$1 timeout 100 python3 -m pkb_ray.cli eval $p problems/$p/expert.py --world-size 1 --json 2>/dev/null \
      | python3 -c "import json,sys; d=json.loads(sys.stdin.read().strip().splitlines()[-1]); print('$2', '$p', d.get('correct'), d.get('speedup'), d.get('speedup_ci_low'), d.get('speedup_ci_high'), d.get('gpus'), d.get('sharing'), d.get('co_tenancy'), round(d.get('node_seconds',0),1))" ) || echo "$2 $p eval failed"
  done; done
}
echo "== pkb eval, before and after (label problem correct speedup ci_lo ci_hi gpus sharing co_tenancy node_s)"
run_eval /tmp/pre before
run_eval $R after
echo "== the node actor on Ray at world size 1: two expert evaluations sent at once to the one group"
PYTHONPATH=/tmp/site:$R timeout 200 python3 - <<'PY' 2>&1 | grep -v "^\[rank\|WARNING\|INFO" | tail -8
import json, os, ray
from pkb_ray.engine import EvalRequest, start_node_evaluators
ray.init(address="local", num_cpus=4, include_dashboard=False, log_to_driver=False)
(actor,) = start_node_evaluators("cuda", world_size=1, placement="gpu_node")
info = ray.get(actor.info.remote())
print("node:", {k: info[k] for k in ("gpus", "exclusive", "topology", "cuda_visible_devices")}, "slots at ws1:", ray.get(actor.slots.remote(1)))
from pkb_ray.problems import load_problems
probs = load_problems("builtin", ["allreduce", "allgather"]).problems
reqs = [EvalRequest(problem_id=p, problems_source="builtin", candidate_source=probs[p].expert_source,
                    world_size=1, device="cuda", size="bench", cell_id=f"groups/{p}") for p in ("allreduce", "allgather")]
res = ray.get([actor.evaluate.remote(r) for r in reqs], timeout=180)
for p, r in zip(("allreduce", "allgather"), res):
    print(" ", p, r.correct, r.speedup, r.speedup_ci_low, r.speedup_ci_high, r.gpus, r.gpu_link, r.sharing, r.co_tenancy, round(r.node_seconds, 1))
json.dump([{"problem": p, "correct": r.correct, "speedup": r.speedup, "gpus": r.gpus, "sharing": r.sharing,
            "co_tenancy": r.co_tenancy, "node_seconds": r.node_seconds} for p, r in zip(("allreduce", "allgather"), res)],
          open(os.environ["OUT"] + "/node_actor_ws1.json", "w"), indent=1)
ray.get(actor.close.remote())
PY
echo "== bench_groups_gpu dry run (1 GPU, world size 1: one group)"
PYTHONPATH=/tmp/site:$R timeout 240 python3 scripts/bench_groups_gpu.py --world-size 1 --ids allreduce,gemm_allreduce --out $OUT/groups_dry 2>&1 | grep -v "^\[rank" | cut -c1-200 | tail -25
