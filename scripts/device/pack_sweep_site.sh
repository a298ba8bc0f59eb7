#!/usr/bin/env bash
# One pack with everything `python3 sweep.py` needs on a GPU machine that the GPU image lacks:
# Ray (pruned to Ray Core), Hydra and OmegaConf, MLflow with its SQLite store, and litellm for
# a tools-mode sweep (plus aiohttp's scripted model server, which the image already holds).
#
#   bash scripts/device/pack_sweep_site.sh                        # .devsite_sweep/sweep-py312.txz
#   bash scripts/device/pack_sweep_site.sh --python-version 3.11 /tmp/sp   # the same cuts for 3.11
#   python3 scripts/device/check_sweep_pack.py /tmp/sp/sweep-py311.txz     # proves them here
#
# Why one pack: ../shared/device/pack-site.sh (51 MB), pack_mlflow.sh (12 MB) and
# pack_litellm.sh (15 MB) plus the tree pass the 64 MiB a run may carry. One resolved set
# shares pydantic, requests and friends once, and the cuts below take it to about 36 MB.
# Cuts, each with why the sweep never needs it:
#   - packages the GPU image holds (IMAGE_HAS below; ../.library/device/KINDS.md lists the
#     image): the previous site pack already ran Ray on the image's msgpack, protobuf, click,
#     requests and PyYAML. typing_extensions and zipp travel all the same (pydantic 2.13
#     needs typing_extensions >= 4.14.1, importlib_metadata 8.9 zipp >= 3.20, and the image's
#     versions are not recorded). KEEP_IMAGE_PACKAGES=1 carries the rest too, and the
#     runtime-env agent's own aiohttp (below): the fallback if the image's fail;
#   - Ray's libraries above Core (data, train, tune, serve, rllib, llm, air,
#     workflow; Ray Core imports them only lazily), the Java jar, the dashboard's web client
#     and the runtime-env agent's vendored aiohttp (14 MB; the agent puts it first on
#     sys.path and falls through to the image's): pkb_ray uses ray.init, actors, placement
#     groups and scheduling strategies only;
#   - debug symbols of _raylet.so, gcs_server and raylet (`strip --strip-unneeded`: 118 MB
#     to 84 MB; the dynamic symbols Python and the loader use stay);
#   - boto3/botocore (30 MB), databricks-sdk and google-auth: MLflow and litellm
#     requirements that only their cloud back ends import, lazily; httpx's optional HTTP/2
#     (h2). An empty `databricks/` stays: mlflow's import runs find_spec("databricks.agents"),
#     which raises without the parent. cryptography stays: MLflow's SQL store imports it;
#     so does its _cffi_backend (cffi); pycparser, which builds cffi modules, does not;
#   - litellm's Rust bridge, proxy web UI and Hugging Face model list (pack_litellm.sh says
#     why each is safe), SQLAlchemy's Cython speedups (pack_mlflow.sh), tokenizers and
#     huggingface_hub (litellm requirements a chat completion never imports), test suites,
#     __pycache__ and console scripts.
# xz -9e, not gzip: the ELF binaries compress 20% better.
#
# Measured 2026-11-28 on 2 CPU cores (about 5 minutes, most of it xz):
#   sweep-py312.txz 35,165,620 bytes (33.5 MiB; 227 MB unpacked: Ray 98 MB, litellm 75 MB).
#   With the tree (~9 MB) and bubblewrap (47 KB): ~42 MiB of 64. KEEP_IMAGE_PACKAGES=1:
#   46,127,916 bytes (44.0 MiB; 268 MB unpacked), ~53 MiB with the tree.
#   Ray's three stripped binaries are 20.7 MB of the xz on their own.
# Verified: the cp311 build in an isolated venv (check_sweep_pack.py: ray.init + actor with a
# runtime_env + placement group, a smoke sweep with MLflow on SQLite, a tools-mode sweep via
# litellm); the cp312 build under CPython 3.12.1 (pyenv here, no torch): the same Ray steps,
# an MLflow SQLite run with a metric, a param and log_dict, and the litellm/Hydra imports.
set -euo pipefail
pyver=3.12
out=.devsite_sweep
while [ $# -gt 0 ]; do
  case $1 in
    --python-version) pyver=$2; shift 2 ;;
    -*) echo "pack_sweep_site.sh: unknown option $1 (only --python-version X.Y)" >&2; exit 2 ;;
    *) out=$1; shift ;;
  esac
done
mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
plat=(--only-binary=:all: --python-version "$pyver" --implementation cp
      --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64)

# The versions pack_litellm.sh verified, as constraints, so MLflow's closure resolves onto them.
cat > "$work/constraints.txt" <<'EOF'
litellm==1.106.0
fastuuid==0.14.0
python-dotenv==1.2.2
importlib_metadata==8.9.0
zipp==4.1.2
tiktoken==0.14.0
regex==2026.5.9
pydantic==2.13.4
pydantic_core==2.46.4
annotated-types==0.7.0
typing-inspection==0.4.2
pydantic-settings==2.14.1
openai==2.54.0
jiter==0.19.0
distro==1.9.0
sniffio==1.3.1
httpx==0.28.1
httpcore==1.0.9
h11==0.16.0
anyio==4.16.0
idna==3.13
certifi==2026.5.20
requests==2.34.2
urllib3==2.7.0
charset-normalizer==3.4.7
aiohttp==3.14.5
ray==2.60.0
hydra-core==1.3.8
mlflow-skinny==3.17.2
EOF
# antlr4 4.9.3 (hydra-core 1.3 needs it) exists only as a source release: build its wheel here.
python3 -m pip wheel -q --no-deps -w "$work/wheels" antlr4-python3-runtime==4.9.3
# Ray, Hydra and OmegaConf without their dependencies (pack-site.sh's choice: the image has
# Ray's, PyYAML for OmegaConf, and antlr4 has no wheel to resolve onto); the rest with theirs,
# resolved together.
python3 -m pip download -q --no-deps "${plat[@]}" -d "$work/wheels" ray==2.60.0 hydra-core==1.3.8 \
  'omegaconf>=2.3,<2.4'
python3 -m pip download -q "${plat[@]}" -c "$work/constraints.txt" -d "$work/wheels" \
  jsonschema mlflow-skinny sqlalchemy alembic litellm openai fastuuid tiktoken pydantic-settings aiohttp
ls "$work/wheels" > "$work/wheels.txt"

# Distributions never carried: in the image already, or never imported by the sweep.
IMAGE_HAS="aiohappyeyeballs aiohttp aiosignal annotated_doc anyio attrs certifi charset_normalizer
click cloudpickle colorama filelock frozenlist fsspec h11 httpcore httpx idna jinja2 markupsafe
msgpack multidict numpy packaging propcache protobuf psutil python_dateutil pyyaml regex requests six tiktoken
urllib3 yarl"
NEVER="tokenizers huggingface_hub hf_xet tqdm pyarrow pandas boto3 botocore s3transfer jmespath
pycparser databricks_sdk google_auth pyasn1 pyasn1_modules h2 hpack hyperframe"
drop=" $NEVER "
[ "${KEEP_IMAGE_PACKAGES:-0}" = 1 ] || drop="$drop $IMAGE_HAS "
drop=$(echo "$drop" | tr '\n' ' ')" "
for whl in "$work"/wheels/*.whl; do
  name=$(basename "$whl" | cut -d- -f1 | tr 'A-Z.-' 'a-z__')
  case "$drop" in *" $name "*) rm "$whl" ;; esac
done
python3 -m pip install -q --no-deps "${plat[@]}" --target "$work/site" "$work"/wheels/*.whl
site=$work/site
r=$site/ray
rm -rf "$r/jars" "$r/rllib" "$r/serve" "$r/llm" "$r/data" "$r/train" "$r/tune" \
       "$r/air" "$r/workflow" "$r/dashboard/client/build"
[ "${KEEP_IMAGE_PACKAGES:-0}" = 1 ] || rm -rf "$r/_private/runtime_env/agent/thirdparty_files"
strip --strip-unneeded "$r/_raylet.so" "$r/core/src/ray/gcs/gcs_server" "$r/core/src/ray/raylet/raylet"
rm -rf "$site/sqlalchemy/testing"
find "$site/sqlalchemy" -name '*_cy*.so' -delete
mkdir -p "$site/databricks"
# litellm's cuts, console scripts, __pycache__ and test suites: the same as pack_litellm.sh's
bash "$(dirname "$0")/../prune_litellm_site.sh" "$site"
du -sh "$site"
name=sweep-py${pyver//./}.txz
tar -c --sort=name -C "$site" . | xz "${XZ_LEVEL:--9e}" -T0 > "$out/$name"  # XZ_LEVEL=-0: fast, for trials
ls -la "$out/$name"
