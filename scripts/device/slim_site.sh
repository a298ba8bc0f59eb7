#!/usr/bin/env bash
# .devsite_slim/site-py312.tgz: the packed site (../shared/device/pack-site.sh) without Ray,
# which the engine, scripts/bench_eval.py, scripts/self_timing.py and tests/engine never
# import: 1.6 MB instead of 49 MiB, which leaves room under the 64 MiB a run may carry for a
# second checkout (an A/B of two commits on one machine). Run it from the repository root
# (add /.devsite_slim/ to .git/info/exclude); a run then starts with
#   mkdir -p .devsite && cp .devsite_slim/site-py312.tgz .devsite/
# before sourcing setup_gpu_machine.sh.
set -euo pipefail
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
tar xzf .devsite/site-py312.tgz -C "$work"
rm -rf "$work"/ray "$work"/ray-*.dist-info
mkdir -p .devsite_slim
tar czf .devsite_slim/site-py312.tgz -C "$work" .
ls -la .devsite_slim/site-py312.tgz
