#!/usr/bin/env bash
# The GPU verification run, for the device (nvidia-h200-x2), in steps with their own limits:
#   bash scripts/device_verify.sh STEP...   (steps: env sweep engine gate experts bench bench_ref refs mlflow)
# One log (device.log), journals and result files go to $OUT (the device tool brings them back). Needs .devsite
# (bash ../shared/device/pack-site.sh) carried along for Ray and Hydra, and for the mlflow step
# .devsite/mlflow-py312.txz (bash scripts/pack_mlflow.sh).
set -uo pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT" /tmp/site
[ -f /tmp/site/.unpacked ] || { tar xzf .devsite/site-py312.tgz -C /tmp/site && touch /tmp/site/.unpacked; }
if [ -f .devsite/mlflow-py312.txz ] && [ ! -f /tmp/site/.mlflow ]; then
  tar xJf .devsite/mlflow-py312.txz -C /tmp/site && touch /tmp/site/.mlflow
fi
REPO=$PWD
export PYTHONPATH=/tmp/site:$PWD
export PKB_CACHE=/tmp/pkb_cache
summary=()
step() {  # step NAME LIMIT_S CMD...
  local name=$1 limit=$2; shift 2
  local t0=$SECONDS
  echo "=== $name: $*" | tee -a "$OUT/steps.log"
  timeout --signal=KILL "$limit" "$@" > "/tmp/$name.log" 2>&1
  local rc=$?
  summary+=("$name rc=$rc $((SECONDS - t0))s")
  cat "/tmp/$name.log" >> "$OUT/device.log"
  tail -n 25 "/tmp/$name.log"
}
for s in "$@"; do
  case $s in
    env) step env 60 bash -c 'nvidia-smi; nvidia-smi topo -m; python3 -c "import torch,ray,hydra;print(torch.__version__, torch.version.cuda, ray.__version__)"
           python3 -c "import torch.distributed._symmetric_memory as s; print(\"signal pad bytes:\", getattr(s, \"get_signal_pad_size\", lambda: \"n/a\")())"
           python3 -c "import mlflow, sqlalchemy; print(\"mlflow\", mlflow.__version__, \"sqlalchemy\", sqlalchemy.__version__)" || true
           python3 -c "import pandas; print(\"pandas\", pandas.__version__)" || echo "no pandas: the cells table is logged with log_dict"' ;;
    engine) step engine 330 python3 -m pytest tests/engine/test_gpu.py -m gpu -s -q -p no:cacheprovider ;;
    gate) step gate 240 python3 -m pytest tests/engine/test_gpu.py -m gpu -s -q -p no:cacheprovider \
            -k "launch_gate or node_survives" ;;
    experts) step experts 150 python3 -m pytest tests/engine/test_gpu.py -m gpu -s -q -p no:cacheprovider -k expert ;;
    bench) step bench 200 python3 scripts/bench_eval.py --device cuda --out "$OUT" ;;
    bench_ref) step bench_ref 200 python3 scripts/bench_eval.py --device cuda --out "$OUT" --tag _nccl_reference \
                 --no-guard --candidate problems/allreduce/reference.py ;;
    sweep) step sweep 200 python3 sweep.py model=expert problems=collectives eval.device=cuda \
             tracking.enabled=false sweep.name=device_experts sweep.progress=false \
             eval.cache_dir=$PKB_CACHE sweep.root=/tmp/sweeps
           cp /tmp/sweeps/device_experts/journal.jsonl "$OUT/experts_journal.jsonl" ;;
    refs) step refs 420 python3 sweep.py model=reference eval.device=cuda tracking.enabled=false \
             sweep.name=device_refs sweep.progress=false eval.trials=2 eval.timing.max_timing_s=3 \
             eval.cache_dir=$PKB_CACHE sweep.root=/tmp/sweeps
          cp /tmp/sweeps/device_refs/journal.jsonl "$OUT/refs_journal.jsonl" ;;
    # A GPU sweep of the 5 experts and the 5 collective references with MLflow on, as a user
    # runs it; the store, its artifacts and the sweep's files come back for screenshots.
    mlflow) mkdir -p /tmp/gpu_mlflow
            step mlflow 420 bash -c "cd /tmp/gpu_mlflow && python3 $REPO/sweep.py models=[expert,reference] \
              problems=collectives eval.device=cuda sweep.name=gpu_compare sweep.progress=false \
              eval.cache_dir=$PKB_CACHE && python3 -m pkb_ray.cli report gpu_compare"
            mkdir -p "$OUT/gpu_mlflow"
            cp -r /tmp/gpu_mlflow/mlflow.db /tmp/gpu_mlflow/mlartifacts /tmp/gpu_mlflow/sweeps "$OUT/gpu_mlflow/" ;;
    *) echo "unknown step $s"; exit 2 ;;
  esac
done
printf '%s\n' "${summary[@]}" | tee "$OUT/summary.txt"
