#!/usr/bin/env bash
# The cuts both packs that carry litellm make to their installed site (`pip install --target
# SITE`): scripts/pack_litellm.sh and scripts/device/pack_sweep_site.sh call this, so that the
# two ship the same litellm. pack_litellm.sh's header says why each cut is safe for a
# chat-completion client: litellm's Rust bridge, the proxy's web UI, swagger and OpenAPI
# snapshot, the Hugging Face model list; then console scripts (bin/), __pycache__ and test
# suites, of every package in SITE.
#   bash scripts/prune_litellm_site.sh SITE
set -euo pipefail
[ $# -eq 1 ] && [ -d "$1" ] || { echo "usage: prune_litellm_site.sh SITE (an installed site directory)" >&2; exit 2; }
site=$1
rm -rf "$site/bin" "$site/litellm/rust_bridge/_native.abi3.so" \
       "$site/litellm/proxy/_experimental/out" "$site/litellm/proxy/swagger" \
       "$site/litellm/proxy/_lazy_openapi_snapshot.json" \
       "$site/litellm/llms/huggingface/huggingface_llms_metadata"
find "$site" -name '__pycache__' -prune -exec rm -rf {} +
find "$site" -type d -name tests -prune -exec rm -rf {} +
