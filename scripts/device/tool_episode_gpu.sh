#!/usr/bin/env bash
# Issue 44's first step on a GPU node: one scripted tool episode built from the allreduce
# expert, its tools run on real GPUs at world size 2 through the engine, as a tools-mode sweep
# runs them (scripts/device/tool_episode.py says what it runs, measures and checks). From the
# repository root, with .devsite_sweep and .devtools carried (scripts/device/README.md):
#   bash scripts/device/tool_episode_gpu.sh               # cuda, world size 2
#   DEVICE=cpu bash scripts/device/tool_episode_gpu.sh    # the plumbing on CPU (sum_ranks, gloo)
# Settings (environment): DEVICE (cuda), WORLD_SIZE (2), ROUNDS (4 warm rounds of each tool),
# EPISODE_TIMEOUT_S (420). Prints each tool's cold and median warm latency (warm check at
# most 5 s), the per-rank profile and the leak check; leaves ONE file,
# $OUT/tool_episode.tgz (the result JSON, the model's requests, the log).
set -u
cd "$(dirname "$0")/../.."
DEVICE=${DEVICE:-cuda}
OUTDIR=${OUT:-/tmp/tool_episode_out}
WORK=$(mktemp -d /tmp/tool_episode.XXXXXX)
mkdir -p "$OUTDIR"
source scripts/device/device_env.sh tool_episode_gpu "ray, litellm, aiohttp, hydra, torch" || exit 2
timeout -k 10 "${EPISODE_TIMEOUT_S:-420}" python3 -m scripts.device.tool_episode --device "$DEVICE" \
  --world-size "${WORLD_SIZE:-2}" --rounds "${ROUNDS:-4}" --out "$WORK" 2>&1 | tee "$WORK/log.txt"
rc=${PIPESTATUS[0]}
tar czf "$OUTDIR/tool_episode.tgz" -C "$WORK" .
ls -la "$OUTDIR/tool_episode.tgz"
exit "$rc"
