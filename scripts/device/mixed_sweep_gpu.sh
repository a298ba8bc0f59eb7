#!/usr/bin/env bash
# Issue 44's mixed sweep on one 4-GPU node: the zero-shot experts and 8 scripted tool episodes
# at once, both sweeps on the node's one shared actor (cluster.share_nodes=true), whose two
# GPU groups go to whichever sweep's work is ready; the tools sweep SIGKILLed mid-way and
# re-run; GPU-slot utilisation, co-tenancy and exact resume checked
# (scripts/device/mixed_sweep.py says what and how). From the repository root, with
# .devsite_sweep and .devtools carried (scripts/device/README.md):
#   bash scripts/device/mixed_sweep_gpu.sh               # cuda, world size 2, kind nvidia-h200-x4
#   DEVICE=cpu bash scripts/device/mixed_sweep_gpu.sh    # the plumbing on CPU (4 fake GPUs, gloo)
# Settings (environment): DEVICE (cuda), SHARING (shared; static: each sweep on its own
# cluster.node_gpus=2 share, for comparison), EPISODES, ZS_PROBLEMS, ZS_ATTEMPTS (the script's
# defaults per device), MIXED_TIMEOUT_S (540). Leaves ONE file, $OUT/mixed_sweep.tgz (the result
# JSON, the sweeps' logs, journals and mlflow.db files, the model's requests).
set -u
cd "$(dirname "$0")/../.."
DEVICE=${DEVICE:-cuda}
OUTDIR=${OUT:-/tmp/mixed_sweep_out}
WORK=$(mktemp -d /tmp/mixed_sweep.XXXXXX)
mkdir -p "$OUTDIR"
source scripts/device/device_env.sh mixed_sweep_gpu "ray, litellm, aiohttp, hydra, mlflow, torch" || exit 2
extra=()
[ -n "${EPISODES:-}" ] && extra+=(--episodes "$EPISODES")
[ -n "${ZS_PROBLEMS:-}" ] && extra+=(--zs-problems "$ZS_PROBLEMS")
[ -n "${ZS_ATTEMPTS:-}" ] && extra+=(--zs-attempts "$ZS_ATTEMPTS")
timeout -k 10 $(( ${MIXED_TIMEOUT_S:-540} + 30 )) python3 -m scripts.device.mixed_sweep --device "$DEVICE" \
  --sharing "${SHARING:-shared}" --timeout-s "${MIXED_TIMEOUT_S:-540}" --out "$WORK" "${extra[@]}" 2>&1 | tee "$WORK/log.txt"
rc=${PIPESTATUS[0]}
# the sweeps' own state (journals, episode journals, mlflow.db), from the work folder the result names
src=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['work'])" "$WORK/mixed_sweep_$DEVICE.json" 2>/dev/null)
[ -n "$src" ] && tar czf "$WORK/state.tgz" -C "$src" --exclude=kernels_cache zeroshot/sweeps tools/sweeps \
  zeroshot/mlflow.db tools/mlflow.db model_requests.json gpu_util.csv 2>/dev/null
tar czf "$OUTDIR/mixed_sweep.tgz" -C "$WORK" .
ls -la "$OUTDIR/mixed_sweep.tgz"
exit "$rc"
