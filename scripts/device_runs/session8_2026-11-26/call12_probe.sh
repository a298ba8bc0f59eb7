# Device calls 12 (0.4.9) and 13 (0.4.10), nvidia-h100-x1, eighth session: why moe_dispatch and moe_combine read
# `unmeasurable` at 0.4.9 (batched one call per sample): their references against
# themselves, with the probe's figures (seconds timing.probe.*) in the results file.
set -o pipefail
source scripts/device_runs/setup_gpu_machine.sh
timeout 400 python3 scripts/self_timing.py --device cuda --world-size 1 --evals 2 --trials 2 --budget-s 300 \
  --ids moe_dispatch,moe_combine,distributed_sample_sort,tile_parallel_vae_decode --out $OUT --tag _ws1_probe 2>&1 | grep -E "#[01]: " | cut -c1-150
python3 - <<'PY'
import json, os
for r in json.load(open(os.environ["OUT"] + "/self_timing_cuda_ws1_probe.json"))["rows"]:
    for e in r.get("evals", []):
        s = e.get("seconds") or {}
        print(r["problem"], e["timing"]["calls_per_sample"], e["timing"]["floor_ms"], e["timing"]["gated"],
              {k: v for k, v in s.items() if k.startswith("timing.probe") or k in ("timing", "calibrate")})
PY
