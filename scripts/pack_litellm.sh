#!/usr/bin/env bash
# Packs what a tools-mode sweep's driver needs to call a model (litellm 1.106.0, the OpenAI SDK
# and what they import for an OpenAI-compatible chat completion with tool calls) and aiohttp
# (the scripted model server of tests/agent/tool_server.py, which bench_tools_sweep.py runs)
# for the GPU image's Python 3.12 / x86_64 into .devsite/litellm-py312.txz, beside
# ../shared/device/pack-site.sh's Ray pack and pack_mlflow.sh's MLflow pack.
#
#   bash scripts/pack_litellm.sh                          # writes .devsite/litellm-py312.txz
#   bash scripts/pack_litellm.sh --python-version 3.11 /tmp/p   # the same cuts for 3.11 (the check here)
#   python3 scripts/check_litellm_pack.py /tmp/p/litellm-py311.txz   # proves the cut set is enough
#
# The package set is the import set of one `litellm.acompletion(model="openai/x", api_base=...,
# tools=[...], _skip_mcp_handler=True)` against the scripted ToolServer (sys.modules after
# it, on CPython 3.11 with litellm 1.106.0; check_litellm_pack.py prints it again), less
#   - what the site pack holds (jsonschema and friends, for litellm's JSON-schema checks);
#   - what any PyTorch install holds, assumed in the GPU image: typing_extensions, jinja2 and
#     markupsafe, filelock, fsspec, sympy, networkx, numpy, plus PyYAML and packaging (Ray
#     from the site pack already relies on both there);
#   - what is imported only inside try/except ImportError: cryptography (litellm's OCI
#     provider) and click/rich/pygments (httpx's command line).
# tokenizers and huggingface_hub are litellm requirements that this call never imports.
# The GPU image's listing (../.library/device/KINDS.md) holds aiohttp, httpx, tiktoken,
# requests and more of this set too, at versions not recorded: they travel anyway, pinned to
# the versions verified here, so the pack does not depend on the image's. Versions are pinned
# to those the CPython 3.11 check ran with.
#
# Measured 2026-11-23: 230 MB installed. Cuts, each with why a chat-completion client never
# needs it:
#   - litellm/rust_bridge/_native.abi3.so (37 MB): litellm's optional Rust bridge; the
#     loader falls back to Python on ImportError, and the call above never loads it;
#   - litellm/proxy/_experimental/out (19.5 MB: the proxy's admin web UI), proxy/swagger
#     (1.5 MB) and proxy/_lazy_openapi_snapshot.json (1.8 MB): read only by the proxy server.
#     The proxy's .py files stay: litellm's core imports ~20 of its modules, some lazily;
#   - litellm/llms/huggingface/huggingface_llms_metadata (1.3 MB): the Hugging Face
#     provider's model list, read only when that provider is called;
#   - __pycache__ (70 MB: pip compiles every module at install; Python writes what it
#     imports at first use), test suites (0.6 MB) and console scripts (bin/).
# Kept on purpose: litellm_core_utils/tokenizers (cl100k and the Anthropic tokenizer load at
# import; tiktoken cannot download there) and the price table backup (the driver sets
# LITELLM_LOCAL_MODEL_COST_MAP). Left: 101 MB; xz -9e: 14.99 MB (xz -6: 15.5 MB), in two
# minutes on two cores.
# Everything carried to a GPU machine may be at most 64 MiB: Ray's site pack (35 MB), this
# pack (15 MB) and the repo (~5 MB) fit; with the MLflow pack (12 MB) too they do not, so
# carry this pack without that one (a tools sweep's tracking is off there).
# scripts/device_verify.sh unpacks it into its own /tmp/litellm_site, not /tmp/site: the MLflow
# pack holds other versions of pydantic, pydantic_core, certifi, idna, urllib3 and more, and
# two versions unpacked over each other would mix files and metadata.
set -euo pipefail
pyver=3.12
out=.devsite
while [ $# -gt 0 ]; do
  case $1 in
    --python-version) pyver=$2; shift 2 ;;
    -*) echo "pack_litellm.sh: unknown option $1 (only --python-version X.Y)" >&2; exit 2 ;;
    *) out=$1; shift ;;
  esac
done
mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
plat=(--only-binary=:all: --python-version "$pyver" --implementation cp
      --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64)
pkgs=(
  litellm==1.106.0 fastuuid==0.14.0 python-dotenv==1.2.2 importlib_metadata==8.9.0 zipp==4.1.2
  tiktoken==0.14.0 regex==2026.5.9
  pydantic==2.13.4 pydantic_core==2.46.4 annotated-types==0.7.0 typing-inspection==0.4.2
  pydantic-settings==2.14.1
  openai==2.54.0 jiter==0.19.0 distro==1.9.0 sniffio==1.3.1
  httpx==0.28.1 httpcore==1.0.9 h11==0.16.0 anyio==4.16.0 idna==3.13 certifi==2026.5.20
  requests==2.34.2 urllib3==2.7.0 charset-normalizer==3.4.7
  aiohttp==3.14.5 aiohappyeyeballs==2.7.1 aiosignal==1.4.0 attrs==26.1.0 frozenlist==1.8.0
  multidict==7.2.1 propcache==0.5.4 yarl==1.25.1
)
# --no-deps: the set above is the whole closure that is needed; pip would add tokenizers,
# huggingface_hub, click, jinja2 and jsonschema (unused here, or already there).
python3 -m pip download -q --no-deps "${plat[@]}" -d "$work/wheels" "${pkgs[@]}"
python3 -m pip install -q --no-deps "${plat[@]}" --target "$work/site" "$work"/wheels/*.whl
site=$work/site
bash "$(dirname "$0")/prune_litellm_site.sh" "$site"  # the cuts above, shared with pack_sweep_site.sh
du -sh "$site"
name=litellm-py${pyver//./}.txz
tar -c --sort=name -C "$site" . | xz -9e -T0 > "$out/$name"
ls -la "$out/$name"
