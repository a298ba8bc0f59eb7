# Device call 3 (nvidia-h100-x1): the next sandboxes started during or after an evaluation,
# alternately (needs the temporary PKB_DEFER_PREWARM line in node.py the NOTES show).
set -o pipefail
source scripts/device_runs/setup_gpu_machine.sh
IDS=allreduce,allgather,reduce_scatter,alltoall,broadcast,allgather_gemm,gemm_reduce_scatter,sp_rmsnorm_allgather
for round in 1 2; do
  for mode in overlap defer; do
    if [ $mode = defer ]; then export PKB_DEFER_PREWARM=1; else unset PKB_DEFER_PREWARM; fi
    timeout 130 python3 scripts/self_timing.py --device cuda --world-size 1 --evals 1 --trials 2 --budget-s 110 \
      --ids $IDS --out /tmp/st_$mode$round --tag _x 2>&1 | grep -v "^\[rank" | grep "#0:" | cut -c1-120 | sed "s/^/$mode$round /"
  done
done
