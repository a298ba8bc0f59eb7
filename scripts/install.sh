#!/usr/bin/env bash
# Installs pkb_ray and what it needs into the current Python, idempotently.
# CPU machines get torch 2.13.0 (a file already on this workplace's disk; elsewhere a
# download); a GPU node keeps the CUDA build of torch it already has.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if ! "$PY" -c 'import torch' 2>/dev/null; then
  "$PY" -m pip install -q torch==2.13.0
fi
if ! "$PY" -c 'import pkb_ray, ray, mlflow, litellm, hydra, pytest, pytest_timeout' 2>/dev/null \
   || [ pyproject.toml -nt "$("$PY" -c 'import pkb_ray,os;print(os.path.dirname(pkb_ray.__file__))')" ]; then
  "$PY" -m pip install -q -e '.[test]'
fi
