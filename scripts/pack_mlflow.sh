#!/usr/bin/env bash
# Packs what the driver needs to write MLflow (mlflow-skinny and the SQLite store's
# SQLAlchemy and Alembic) for the GPU image's Python 3.12 / x86_64 into
# .devsite/mlflow-py312.txz, beside ../shared/device/pack-site.sh's Ray pack.
#
#   bash scripts/pack_mlflow.sh            # writes .devsite/mlflow-py312.txz
#
# Everything that travels to a GPU machine may be at most 64 MiB: the Ray pack (~51 MB),
# this pack and the repo (~2 MB). Measured 2026-11-23: 144 MB of wheels installed; xz
# (not gzip: 17.0 MB) and three cuts bring it to about 12 MB:
#   - SQLAlchemy's Cython speedups (*_cy*.so, ~9 MB): it falls back to pure Python, and a
#     sweep writes a few hundred rows;
#   - test suites and console scripts;
#   - PyYAML, which the GPU image already has (pkb_ray reads problem.yaml there).
# Verified on CPython 3.11 with the same cuts: the tracker creates the store, logs cells,
# artifacts and the cells table (log_dict when pandas is absent), reconciles and closes.
set -euo pipefail
out=${1:-.devsite}
mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
plat=(--only-binary=:all: --python-version 3.12 --implementation cp
      --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64)
python3 -m pip download -q "${plat[@]}" -d "$work/wheels" mlflow-skinny==3.17.2 sqlalchemy alembic
rm -f "$work"/wheels/[Pp][Yy][Yy][Aa][Mm][Ll]-*.whl
python3 -m pip install -q --no-deps "${plat[@]}" --target "$work/site" "$work"/wheels/*.whl
rm -rf "$work/site/bin" "$work/site/sqlalchemy/testing"
find "$work/site" -name '__pycache__' -prune -exec rm -rf {} +
find "$work/site" -type d -name tests -prune -exec rm -rf {} +
find "$work/site/sqlalchemy" -name '*_cy*.so' -delete
tar cJf "$out/mlflow-py312.txz" -C "$work/site" .
ls -la "$out/mlflow-py312.txz"
du -cb "$out"/*.t?z | tail -1
