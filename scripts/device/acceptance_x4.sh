#!/usr/bin/env bash
# Issues 37 and 42's acceptance runs on one 4-GPU node, one device call per stage (each fits
# the call's 10 minutes), kind nvidia-h200-x4 (or -h100-x4), carry [".devsite_sweep",
# ".devtools"] (scripts/device/README.md packs them; the upstream checkout for stage `pkb` is
# .devtools/pkb_upstream):
#
#   bash scripts/device/acceptance_x4.sh a     # ws 2: bench_eval x5 on GPUs 0,1 beside the
#                                              # experts x5 on GPUs 2,3, then every problem
#                                              # against itself, halves on the two pairs
#   bash scripts/device/acceptance_x4.sh b     # the GPU suite three times (pytest_gpu.sh)
#   bash scripts/device/acceptance_x4.sh c     # ws 4: every problem against itself, then the audit
#   bash scripts/device/acceptance_x4.sh d     # ws 2: the audit, then the upstream 87 audited
#
# Why pairs side by side: a sweep's GPU groups share a node, so the ws-2 figures are taken
# as users get them, and one call holds twice the work. Each stage writes into $OUT/<stage>/
# (its logs, the scripts' .json/.md, the commit) and tars it to $OUT/<stage>.tgz: the device
# tool brings back a few files, not hundreds. It prints the summary lines to read from the
# call's output alone. Stages are independent: a failed one does not stop the next call.
set -uo pipefail
cd "$(dirname "$0")/../.."
STAGE=${1:?usage: acceptance_x4.sh a|b|c|d}
OUT=${OUT:-/tmp/out}
source scripts/device/setup_gpu_machine.sh > /dev/null 2>&1
t0=$SECONDS
T() { echo "[$((SECONDS - t0))s] $*"; }
R=$OUT/$STAGE
mkdir -p "$R"
git rev-parse HEAD > "$R/commit.txt" 2>/dev/null || echo "${PKB_COMMIT:-unknown}" > "$R/commit.txt"
nvidia-smi --query-gpu=index,name --format=csv,noheader > "$R/gpus.txt" 2>&1

# The problems a reference can be timed at world size $1, split in two comma lists (one line
# each): by index parity, so the two halves hold big and small problems alike.
halves() {
  python3 - "$1" <<'PY'
import sys
from pkb_ray.problems import load_problems
ws = int(sys.argv[1])
ids = [p for p, pr in load_problems("builtin").problems.items() if not pr.spec.world_size_refusal(ws, tests=True)]
print(",".join(ids[0::2])); print(",".join(ids[1::2]))
PY
}

summary_self() {  # the self-timing table's head line, and what was not correct
  for f in "$@"; do
    python3 - "$f" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
rows = [r for r in d["rows"] if "evals" in r]
bad = [f"{r['problem']}:{e['failure']}" for r in rows for e in r["evals"] if not e["correct"]]
print(f"  {sys.argv[1].rsplit('/', 1)[-1]}: {d['within_3pct_and_ci_holds_1']} of {d['problems']} within 0.97-1.03 "
      f"holding 1.0; not correct: {bad or 'none'}; not reached: "
      f"{sum(1 for r in d['rows'] if r.get('skipped') in ('out of time', 'not reached yet'))}")
PY
  done
}

case "$STAGE" in
a)
  CUDA_VISIBLE_DEVICES=0,1 timeout 260 python3 scripts/bench_eval.py --device cuda --world-size 2 --repeats 5 \
      --out "$R" --tag _ws2 > "$R/bench_eval.log" 2>&1 &
  b=$!
  CUDA_VISIBLE_DEVICES=2,3 timeout 260 python3 scripts/expert_repeats.py --world-size 2 --repeats 5 \
      --cache-dir /tmp/er2 --out "$R" --tag _pair23 > "$R/expert_repeats.log" 2>&1 &
  e=$!
  wait $b; T "bench_eval ws2 x5 rc=$?"; grep -E "^\| [0-9]" "$R/bench_eval_cuda_ws2.md"
  python3 scripts/timing_spread.py "$R/bench_eval_cuda_ws2.json" > "$R/spread.txt" 2>&1; tail -3 "$R/spread.txt" | cut -c1-200
  wait $e; T "expert_repeats ws2 x5 rc=$?"; grep -E "^\| " "$R/expert_repeats_ws2_pair23.md" | cut -c1-200
  mapfile -t H < <(halves 2)
  left=$((560 - (SECONDS - t0)))
  CUDA_VISIBLE_DEVICES=0,1 timeout $left python3 scripts/self_timing.py --device cuda --world-size 2 --evals 1 \
      --trials 2 --ids "${H[0]}" --budget-s $((left - 40)) --cache-dir /tmp/st2 --out "$R" --tag _ws2_pair01 \
      > "$R/self_timing_pair01.log" 2>&1 &
  CUDA_VISIBLE_DEVICES=2,3 timeout $left python3 scripts/self_timing.py --device cuda --world-size 2 --evals 1 \
      --trials 2 --ids "${H[1]}" --budget-s $((left - 40)) --cache-dir /tmp/st2 --out "$R" --tag _ws2_pair23 \
      > "$R/self_timing_pair23.log" 2>&1 &
  wait; T "self_timing ws2 halves"
  summary_self "$R"/self_timing_cuda_ws2_pair*.json
  ;;
b)
  OUT=$R RUNS=3 TOTAL_S=570 bash scripts/device/pytest_gpu.sh > "$R/pytest_gpu.out" 2>&1
  T "pytest_gpu x3 rc=$?"; cat "$R/pytest_gpu.md" 2>/dev/null | tail -8
  ;;
c)
  timeout 420 python3 scripts/self_timing.py --device cuda --world-size 4 --evals 1 --trials 2 --budget-s 380 \
      --cache-dir /tmp/st4 --out "$R" --tag _ws4 > "$R/self_timing_ws4.log" 2>&1
  T "self_timing ws4 rc=$?"; summary_self "$R/self_timing_cuda_ws4.json"
  OUT=$R TOTAL_S=$((570 - (SECONDS - t0))) bash scripts/audit_gpu.sh 4 > /dev/null 2>&1
  T "audit ws4 rc=$?"; tail -5 "$R/audit_gpu.log" | cut -c1-200
  ;;
d)
  OUT=$R TOTAL_S=560 bash scripts/audit_gpu.sh 2 pkb > /dev/null 2>&1
  T "audit ws2 + upstream rc=$?"; tail -8 "$R/audit_gpu.log" | cut -c1-200
  ;;
*)
  echo "acceptance_x4.sh: unknown stage '$STAGE' (a, b, c or d)" >&2; exit 2 ;;
esac
cd "$OUT" && tar czf "$STAGE.tgz" "$STAGE" && rm -rf "$STAGE"
T "wrote $OUT/$STAGE.tgz"
