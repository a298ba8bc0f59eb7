# Device call (nvidia-h100-x1): the same four references timed against themselves at world
# size 1 by main before this session (a6f4544, .baseline/base_a6f4544.tgz made by `git archive`)
# and by this tree, alternately, on one machine.
set -o pipefail
source scripts/device_runs/setup_gpu_machine.sh
mkdir -p /tmp/base && tar xzf .baseline/base_a6f4544.tgz -C /tmp/base
R=$PWD
IDS=allreduce,allgather,reduce_scatter,alltoall
for round in 1 2; do
  for tree in base new; do
    if [ $tree = base ]; then cd /tmp/base; export PYTHONPATH=/tmp/site:/tmp/base; else cd $R; export PYTHONPATH=/tmp/site:$R; fi
    timeout 120 python3 scripts/self_timing.py --device cuda --world-size 1 --evals 1 --trials 2 --budget-s 100 \
      --ids $IDS --out /tmp/st_$tree$round --tag _x 2>&1 | grep -v "^\[rank" | grep "#0:" | cut -c1-150 | sed "s/^/$tree$round /"
  done
done
cd $R
