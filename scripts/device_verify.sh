#!/usr/bin/env bash
# The GPU verification run, for the device (nvidia-h200-x2), in steps with their own limits:
#   bash scripts/device_verify.sh STEP...
# steps: setup env engine bench bench_host self self_pkb mlflow tools
# One log (device.log), result files and tables go to $OUT (the device tool brings them back).
# Needs, carried along: .devsite (bash ../shared/device/pack-site.sh: Ray, Hydra; .tgz, or recompressed with xz to .txz to leave room under the 64 MiB a call carries) and
# .devtools holding Debian's bubblewrap .deb (apt-get download bubblewrap) and, for
# self_pkb, an upstream PKB tree at .devtools/pkb_upstream (never committed); for mlflow,
# .devsite/mlflow-py312.txz (bash scripts/pack_mlflow.sh: MLflow for the driver, ~12 MB); for
# tools (a tools-mode sweep of 8 scripted episodes, scripts/bench_tools_sweep.py),
# .devsite/litellm-py312.txz (bash scripts/pack_litellm.sh: litellm, the OpenAI SDK, pydantic and
# aiohttp, ~15 MB). Site, litellm and MLflow packs together pass the 64 MiB a call carries:
# move mlflow-py312.txz aside for a tools run (its tracking is off). The litellm pack unpacks
# into its own /tmp/litellm_site, first on the tools step's path only: the MLflow pack holds
# other versions of pydantic and friends, which must not mix with its files in /tmp/site.
set -uo pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT" /tmp/site
[ -f /tmp/site/.unpacked ] || { tar xf "$(ls .devsite/site-py312.t*z | head -1)" -C /tmp/site && touch /tmp/site/.unpacked; }
if [ -f .devsite/mlflow-py312.txz ] && [ ! -f /tmp/site/.mlflow ]; then
  tar xJf .devsite/mlflow-py312.txz -C /tmp/site && touch /tmp/site/.mlflow
fi
if [ -f .devsite/litellm-py312.txz ] && [ ! -f /tmp/litellm_site/.unpacked ]; then
  mkdir -p /tmp/litellm_site && tar xJf .devsite/litellm-py312.txz -C /tmp/litellm_site && touch /tmp/litellm_site/.unpacked
fi
REPO=$PWD
export PYTHONPATH=/tmp/site:$PWD
export PKB_CACHE=/tmp/pkb_cache
# The candidates' sandbox: the GPU image has no bubblewrap; Debian's unpacks and runs there.
if ! command -v bwrap >/dev/null && ls .devtools/bubblewrap_*.deb >/dev/null 2>&1; then
  dpkg -x .devtools/bubblewrap_*.deb /tmp/bw && export PKB_BWRAP=/tmp/bw/usr/bin/bwrap
fi
id pkb-sandbox >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin pkb-sandbox
summary=()
step() {  # step NAME LIMIT_S CMD...
  local name=$1 limit=$2; shift 2
  local t0=$SECONDS
  echo "=== $name: $*" | tee -a "$OUT/steps.log"
  timeout --signal=KILL "$limit" "$@" > "/tmp/$name.log" 2>&1
  local rc=$?
  summary+=("$name rc=$rc $((SECONDS - t0))s")
  grep -v '^\[rank[0-9]*\]:\|^frame #\|^Exception raised from' "/tmp/$name.log" >> "$OUT/device.log"
  grep -v '^\[rank[0-9]*\]:\|^frame #\|^Exception raised from' "/tmp/$name.log" | tail -n 25
}
for s in "$@"; do
  case $s in
    setup) step setup 60 python3 -c "from pkb_ray.engine import launch, nccl_stub; print(launch.plan_sandbox().description); print(nccl_stub.build('$PKB_CACHE'))" ;;
    env) step env 60 bash -c 'nvidia-smi; nvidia-smi topo -m; python3 -c "import torch,ray,hydra;print(torch.__version__, torch.version.cuda, ray.__version__)"
           python3 -c "import torch.distributed._symmetric_memory as s; print(\"signal pad bytes:\", getattr(s, \"get_signal_pad_size\", lambda: \"n/a\")())"
           python3 -c "import mlflow, sqlalchemy; print(\"mlflow\", mlflow.__version__, \"sqlalchemy\", sqlalchemy.__version__)" || true
           python3 -c "import pandas; print(\"pandas\", pandas.__version__)" || echo "no pandas: the cells table is logged with log_dict"' ;;
    engine) step engine 420 python3 -m pytest tests/engine/test_gpu.py -m gpu -s -q -p no:cacheprovider ;;
    bench) step bench 240 python3 scripts/bench_eval.py --device cuda --out "$OUT" ;;
    bench_host) step bench_host 150 python3 scripts/bench_eval.py --device cuda --out "$OUT" --transport host \
                  --shapes 1024x1024 8192x8192 --repeats 3 --tag _host ;;
    engine_quick) step engine_quick 200 python3 -m pytest tests/engine/test_gpu.py -m gpu -s -q -p no:cacheprovider \
                    -k "prebuild or compile_error or regenerates or reduce_scatter or faults" ;;
    self) step self 540 python3 scripts/self_timing.py --device cuda --out "$OUT" --budget-s "${SELF_BUDGET_S:-480}" \
            --trials 2 --max-timing-s 1.5 --ids "${SELF_IDS:-}" --evals "${SELF_EVALS:-2}" --tag "${SELF_TAG:-}" ;;
    self_pkb) step self_pkb 540 python3 scripts/self_timing.py --device cuda --out "$OUT" --tag _pkb \
                --source "pkb:$PWD/.devtools/pkb_upstream" --trials 1 --max-timing-s 1.5 --budget-s 480 ;;
    # A GPU sweep of the 5 experts and the 5 collective references with MLflow on, as a user
    # runs it; the store, its artifacts and the sweep's files come back for screenshots.
    # Run in $OUT itself, so a run cut off at the device's limit still brings back what it
    # wrote; the tool brings back no deep folders, so the artifacts and sweep travel as a tar.
    mlflow) mkdir -p "$OUT/gpu_mlflow"
            step mlflow 420 bash -c "cd $OUT/gpu_mlflow && python3 $REPO/sweep.py models=[expert,reference] \
              problems=collectives eval.device=cuda sweep.name=gpu_compare sweep.progress=false \
              eval.cache_dir=$PKB_CACHE"
            tar czf "$OUT/gpu_mlflow.tgz" -C "$OUT" gpu_mlflow/mlartifacts gpu_mlflow/sweeps ;;
    # 8 episodes of a scripted tool-using model (tests/agent/tool_server.py) on allreduce, as
    # `sweep.py mode=tools` runs them; tools_sweep_cuda.{json,md} come back.
    tools) step tools 500 env PYTHONPATH="/tmp/litellm_site:$PYTHONPATH" python3 scripts/bench_tools_sweep.py \
             --device cuda --episodes 8 --cache-dir "$PKB_CACHE" --out "$OUT" ;;
    # The same sweep on the node's CPUs: proves the packs carry the whole tools-mode driver
    # (Ray, litellm, the sandbox) on the GPU image when only a one-GPU machine is lent.
    tools_cpu) step tools_cpu 400 env PYTHONPATH="/tmp/litellm_site:$PYTHONPATH" python3 scripts/bench_tools_sweep.py \
                 --device cpu --episodes 8 --cache-dir "$PKB_CACHE" --out "$OUT" ;;
    *) echo "unknown step $s"; exit 2 ;;
  esac
done
printf '%s\n' "${summary[@]}" | tee "$OUT/summary.txt"
