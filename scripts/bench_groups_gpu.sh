#!/usr/bin/env bash
# Issue 27 in one batched run on a 4- or 8-GPU node (well inside 25 minutes): GPU groups
# against exclusive mode at world size 2 (and 4 on 8 GPUs). Results under
# benchmarks/results/groups_gpu_<date>/ (scripts/bench_groups_gpu.py says what each is).
#   bash scripts/bench_groups_gpu.sh
set -euo pipefail
cd "$(dirname "$0")/.."
# NVLink multicast stays off on these machines (DESIGN.md); every rank gets these too.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
n=$(nvidia-smi --query-gpu=index --format=csv,noheader | wc -l)
out="benchmarks/results/groups_gpu_$(date -u +%Y-%m-%d)"
if [ "$n" -lt 4 ]; then
  echo "bench_groups_gpu: needs 4 or 8 GPUs, this node has $n" >&2
  exit 2
fi
python3 scripts/bench_groups_gpu.py --world-size 2 --out "$out"
if [ "$n" -ge 8 ]; then
  python3 scripts/bench_groups_gpu.py --world-size 4 --out "$out"
fi
