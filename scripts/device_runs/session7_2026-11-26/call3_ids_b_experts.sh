# Device call 3 (nvidia-h100-x1), seventh session, harness 0.4.4: the other 49 references
# timed against themselves (ids_b.txt; tp_rmsnorm_sharded_hidden no longer runs at world
# size 1), then the experts and PyTorch's fused symmetric-memory ops (no false refusals).
set -o pipefail
source scripts/device_runs/setup_gpu_machine.sh
t0=$(date +%s)
timeout 400 python3 scripts/self_timing.py --device cuda --world-size 1 --evals 1 --trials 2 --budget-s 360 \
  --ids $(cat scripts/device_runs/freeze_2026-11-26/ids_b.txt) --out $OUT --tag _ws1_0.4.4_ids_b 2>&1 | grep -E "#0: " | cut -c1-150
echo "self-timing: $(( $(date +%s) - t0 )) s"; t1=$(date +%s)
for c in allreduce:problems/allreduce/expert.py allgather:problems/allgather/expert.py reduce_scatter:problems/reduce_scatter/expert.py alltoall:problems/alltoall/expert.py broadcast:problems/broadcast/expert.py allreduce:tests/engine/fixtures/candidates/torch_symm/allreduce_one_shot.py allgather_gemm:tests/engine/fixtures/candidates/torch_symm/allgather_gemm_fused.py gemm_reduce_scatter:tests/engine/fixtures/candidates/torch_symm/gemm_reduce_scatter_fused.py; do
  p=${c%%:*}; f=${c#*:}
  [ $(( $(date +%s) - t0 )) -gt 560 ] && { echo "$p $(basename $f): out of time"; continue; }
  timeout 60 python3 -m pkb_ray.cli eval $p $f --world-size 1 --json 2>/dev/null | tail -1 | tee -a $OUT/experts_ws1.jsonl | python3 -c "
import json,sys; d=json.loads(sys.stdin.read())
print('$p $(basename $f)', d.get('correct'), d.get('failure'), 'speedup', d.get('speedup'), d.get('speedup_ci_low'), d.get('speedup_ci_high'), 'node_s', round(d.get('node_seconds') or 0, 2))" || echo "$p $(basename $f): no result"
done
echo "experts: $(( $(date +%s) - t1 )) s"
