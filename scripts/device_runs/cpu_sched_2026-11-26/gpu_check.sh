# Device call (nvidia-h100-x1): harness 0.4.2 on one GPU at world size 1 after the cpu
# scheduling change, the autogroup fix and the files quota: the GPU tests, the experts, the
# inode attack, where the candidate's rank runs, and three references timed against themselves.
set -o pipefail
source scripts/device_runs/setup_gpu_machine.sh
t0=$(date +%s)
timeout 200 python3 -m pytest tests/engine/test_gpu_ws1.py -m gpu -q -x 2>&1 | tail -4
echo "gpu tests: $(( $(date +%s) - t0 )) s"
cat > /tmp/says_where.py <<'PY'
import os
def solution(x):
    raise RuntimeError(f"cores {sorted(os.sched_getaffinity(0))} of {os.cpu_count()} idle {os.sched_getscheduler(0) == os.SCHED_IDLE}")
PY
for c in allreduce:problems/allreduce/expert.py allgather:problems/allgather/expert.py allreduce:tests/engine/adversarial/fills_inodes.py allreduce:/tmp/says_where.py; do
  p=${c%%:*}; f=${c#*:}
  timeout 120 python3 -m pkb_ray.cli eval $p $f --world-size 1 --json 2>/dev/null | tail -1 | python3 -c "
import json,sys; d=json.loads(sys.stdin.read())
print('$p $(basename $f)', d.get('correct'), d.get('failure'), 'speedup', d.get('speedup'), d.get('speedup_ci_low'), d.get('speedup_ci_high'), '|', (d.get('message') or '')[:230], '|', d.get('sandbox','')[:160])" || echo "$p $f: no result"
done
echo "evals: $(( $(date +%s) - t0 )) s"
left=$(( 520 - ($(date +%s) - t0) ))
timeout $left python3 scripts/self_timing.py --device cuda --world-size 1 --evals 1 --trials 2 --budget-s $((left-30)) \
  --ids allreduce,allgather,reduce_scatter,alltoall --out $OUT --tag _ws1_0.4.2 2>&1 | grep -v "^\[rank" | tail -12
echo "total: $(( $(date +%s) - t0 )) s"; ls /tmp | grep -c pkb_sbx || true
