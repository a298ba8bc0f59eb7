# Device call (nvidia-h100-x1): the final tree (filter comparing int arguments by their low
# 32 bits): the GPU test, the experts (no false refusals), PyTorch's one-shot all-reduce, and
# the high-bits attack on a GPU worker.
set -o pipefail
source scripts/device_runs/setup_gpu_machine.sh
t0=$(date +%s)
timeout 200 python3 -m pytest tests/engine/test_gpu_ws1.py -m gpu -q -x 2>&1 | tail -2
echo "gpu tests: $(( $(date +%s) - t0 )) s"
for c in allreduce:problems/allreduce/expert.py allgather:problems/allgather/expert.py allreduce:tests/engine/adversarial/opens_socket_high_bits.py allreduce:tests/engine/adversarial/escapes_quota.py; do
  p=${c%%:*}; f=${c#*:}
  timeout 120 python3 -m pkb_ray.cli eval $p $f --world-size 1 --json 2>/dev/null | tail -1 | python3 -c "
import json,sys; d=json.loads(sys.stdin.read())
print('$p $(basename $f)', d.get('correct'), d.get('failure'), 'speedup', d.get('speedup'), d.get('speedup_ci_low'), d.get('speedup_ci_high'), '|', (d.get('message') or '')[:200])"
done
echo "total: $(( $(date +%s) - t0 )) s"
