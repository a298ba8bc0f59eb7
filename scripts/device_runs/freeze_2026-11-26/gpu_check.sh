# Device call (nvidia-h100-x1): harness 0.4.3 on one GPU at world size 1 after the filter
# refuses clone into a namespace, clone3 and SIGCONT, and the candidate's checks moved after
# both halves of a pair: the GPU tests, the experts and PyTorch's own symmetric-memory ops
# (no false refusals), the quota attack (clone refused on a GPU worker too), and references
# timed against themselves (the first 12 problems of the ws1 list, as in the fourth session).
set -o pipefail
source scripts/device_runs/setup_gpu_machine.sh
t0=$(date +%s)
timeout 240 python3 -m pytest tests/engine/test_gpu_ws1.py -m gpu -q -x 2>&1 | tail -4
echo "gpu tests: $(( $(date +%s) - t0 )) s"
for c in allreduce:problems/allreduce/expert.py allgather:problems/allgather/expert.py allreduce:tests/engine/adversarial/escapes_quota.py; do
  p=${c%%:*}; f=${c#*:}
  timeout 120 python3 -m pkb_ray.cli eval $p $f --world-size 1 --json 2>/dev/null | tail -1 | python3 -c "
import json,sys; d=json.loads(sys.stdin.read())
print('$p $(basename $f)', d.get('correct'), d.get('failure'), 'speedup', d.get('speedup'), d.get('speedup_ci_low'), d.get('speedup_ci_high'), '|', (d.get('message') or '')[:260], '|', d.get('flags'))" || echo "$p $f: no result"
done
echo "evals: $(( $(date +%s) - t0 )) s"
left=$(( 540 - ($(date +%s) - t0) ))
timeout $left python3 scripts/self_timing.py --device cuda --world-size 1 --evals 1 --trials 2 --budget-s $((left-40)) \
  --ids "$1" --out $OUT --tag _ws1_0.4.3 2>&1 | grep -v "^\[rank" | tail -16
echo "total: $(( $(date +%s) - t0 )) s"; ls /tmp | grep -c pkb_sbx || true
