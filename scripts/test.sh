#!/usr/bin/env bash
# The test command of the README and of CI: install, then run the whole CPU suite.
# GPU tests are marked `gpu` and skip themselves on machines without CUDA.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh --test
exec python3 -m pytest -q -ra --durations=20 "$@"
