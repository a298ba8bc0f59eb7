# .devsite_slim/site-py312.tgz: the packed site (../shared/device/pack-site.sh) without Ray,
# which the engine, bench_eval.py, self_timing.py and tests/engine never import. 1.6 MB
# instead of 49 MiB: room under the 64 MiB a run may carry for a second tree (9c78ee4).
# Add /.devsite_slim/ to .git/info/exclude; a call script then starts with
#   mkdir -p .devsite && cp .devsite_slim/site-py312.tgz .devsite/
# before sourcing setup_gpu_machine.sh (session9_2026-11-26/call11_hold.sh does).
set -euo pipefail
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
tar xzf .devsite/site-py312.tgz -C "$work"
rm -rf "$work"/ray "$work"/ray-*.dist-info
mkdir -p .devsite_slim
tar czf .devsite_slim/site-py312.tgz -C "$work" .
ls -la .devsite_slim/site-py312.tgz
