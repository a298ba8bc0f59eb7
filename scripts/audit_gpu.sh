#!/usr/bin/env bash
# The suite audit on one GPU node (`pkb problems check --device cuda`), for the device tool:
#   bash scripts/audit_gpu.sh [2] [4] [pkb]
# Each argument is a step: a world size of the builtin suite, or `pkb`: the upstream PKB
# references (importer, world size 2) from .devtools/pkb_upstream (carry it; never commit it).
# Default: 2 4. The steps share TOTAL_S seconds (default 560, under the device's 10 minutes):
# each gets the time left over the steps left, and its audit stops starting problems 45 s
# before its share ends (a run cut short still writes what it did; the rest read `skip: not
# reached`). A whole suite at one world size takes about 2-3 s a problem, so give each world
# size its own call (`bash scripts/audit_gpu.sh 2`, then `... 4`, then `... pkb`) to finish
# them. Into $OUT: one .md and one .json per step (each well under 16 MiB) and
# audit_gpu.log: 7 files at most.
set -uo pipefail
cd "$(dirname "$0")/.."
# NVLink multicast stays off on these machines (DESIGN.md); every rank inherits these.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
LOG="$OUT/audit_gpu.log"
TOTAL_S=${TOTAL_S:-560}
PROBLEM_TIMEOUT_S=${PROBLEM_TIMEOUT_S:-90}
steps=("$@")
[ ${#steps[@]} -eq 0 ] && steps=(2 4)
t0=$SECONDS

# pyyaml (the problem loader) may be missing from the GPU image: the packed site has it
if ! python3 -c "import yaml" 2>/dev/null; then
  if ls .devsite/site-py312.t*z >/dev/null 2>&1; then
    mkdir -p /tmp/site
    [ -f /tmp/site/.unpacked ] || { tar xf "$(ls .devsite/site-py312.t*z | head -1)" -C /tmp/site && touch /tmp/site/.unpacked; }
    export PYTHONPATH=/tmp/site
  else
    echo "audit_gpu: no pyyaml here; carry .devsite (bash ../shared/device/pack-site.sh)" | tee -a "$LOG"
    exit 2
  fi
fi
export PYTHONPATH=${PYTHONPATH:+$PYTHONPATH:}$PWD
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
{ echo "=== $(date -u +%FT%TZ) audit_gpu.sh ${steps[*]} on $gpus GPUs, commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
  nvidia-smi --query-gpu=index,name,memory.total --format=csv,noheader
  python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'nccl', torch.cuda.nccl.version())"
} 2>&1 | tee -a "$LOG"

left=${#steps[@]}
status=0
for step in "${steps[@]}"; do
  share=$(( (TOTAL_S - (SECONDS - t0)) / left ))
  left=$((left - 1))
  if [ "$share" -lt 30 ]; then
    echo "skip step $step: ${share}s left" | tee -a "$LOG"
    continue
  fi
  case $step in
    pkb) ws=2; args=(--source "pkb:$PWD/.devtools/pkb_upstream" --tag _pkb)
         [ -d .devtools/pkb_upstream/reference ] || { echo "skip pkb: .devtools/pkb_upstream not carried" | tee -a "$LOG"; continue; } ;;
    *) ws=$step; args=() ;;
  esac
  if [ "$ws" -gt "$gpus" ]; then
    echo "skip world size $ws: $gpus GPUs here" | tee -a "$LOG"
    continue
  fi
  budget=$(( share > 90 ? share - 45 : share / 2 ))
  echo "=== step $step: world size $ws, ${share}s (budget ${budget}s), $(date -u +%T)" | tee -a "$LOG"
  # timeout signals its whole process group: the rank processes go with the audit
  timeout --kill-after=10 "$share" python3 -m pkb_ray.cli problems check --device cuda --world-size "$ws" \
    --out "$OUT" --budget-s "$budget" --problem-timeout "$PROBLEM_TIMEOUT_S" "${args[@]}" 2>&1 | tee -a "$LOG"
  rc=${PIPESTATUS[0]}
  echo "=== step $step: rc=$rc after $((SECONDS - t0))s" | tee -a "$LOG"
  [ "$rc" -ne 0 ] && status=1
done
ls -la "$OUT" | tee -a "$LOG"
exit $status
