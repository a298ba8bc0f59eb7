#!/usr/bin/env bash
# Evaluate expert solutions on the GPUs, one compact line per (problem, world size):
#   source scripts/device/setup_gpu_machine.sh
#   bash scripts/device/try_experts.sh [PROBLEM ...]        # default: the symm_compose experts
# Settings (environment): WORLD_SIZES (default "2 4"; a size the problem does not allow is
# skipped), TRIALS (default 5), EVAL_TIMEOUT_S (default 60, per evaluation), BUDGET_S
# (default 380: evaluations not started by then are listed as skipped, so the whole run stays
# under 400 s; run again with the skipped ones named). Each evaluation is its own `pkb eval`
# process under `timeout`, so a crash, hang or wrong answer of one expert cannot stop the
# others. Full JSON results and logs go to $OUT (or /tmp/try_experts).
set -u
cd "$(dirname "$0")/../.."
OUTDIR=${OUT:-/tmp/try_experts}
mkdir -p "$OUTDIR"
WORLD_SIZES=${WORLD_SIZES:-"2 4"}
TRIALS=${TRIALS:-5}
EVAL_TIMEOUT_S=${EVAL_TIMEOUT_S:-60}
BUDGET_S=${BUDGET_S:-380}
DEFAULT="gemm_allreduce tp_mlp gemm_reduce_scatter allgather_gemm allgather_gemm_a_transposed
allgather_gemm_k_sharded sp_rmsnorm_allgather fsdp_param_allgather vocab_parallel_cross_entropy
moe_dispatch moe_combine halo_stencil fft2d_transpose ulysses_all_to_all_dims ulysses_seq_to_heads
ulysses_heads_to_seq ulysses_qkv_seq_to_heads gnn_feature_exchange"
PROBLEMS=${*:-$DEFAULT}
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
DEVICE=${DEVICE:-cuda}  # cpu: a smoke test of this script's plumbing (experts need CUDA)
# "problem:ws" for every world size each problem allows, read once through pkb_ray's loader
ALLOWED=$(python3 -c "
import sys
from pkb_ray.problems.loader import load_problem
print(' '.join(f'{p}:{w}' for p in sys.argv[1:] for w in load_problem('builtin', p).spec.world_sizes))
" $PROBLEMS) || { echo "try_experts: cannot load the problems (PYTHONPATH? source setup_gpu_machine.sh)"; exit 2; }
start=$(date +%s)
printf '%-30s %-3s %-26s %s\n' problem ws verdict "speedup [95% interval] / message"
for ws in $WORLD_SIZES; do
  for p in $PROBLEMS; do
    case " $ALLOWED " in *" $p:$ws "*) ;; *)
      printf '%-30s %-3s %s\n' "$p" "$ws" "not a world size of this problem"; continue;; esac
    if [ $(( $(date +%s) - start )) -gt "$BUDGET_S" ]; then printf '%-30s %-3s %s\n' "$p" "$ws" "skipped (budget)"; continue; fi
    log="$OUTDIR/${p}_ws${ws}"
    t0=$(date +%s)
    timeout -k 5 "$EVAL_TIMEOUT_S" python3 -m pkb_ray.cli eval "$p" "problems/$p/expert.py" --device "$DEVICE" \
      --world-size "$ws" --trials "$TRIALS" --json >"$log.out" 2>"$log.err"
    rc=$?
    t1=$(date +%s)
    python3 - "$p" "$ws" "$rc" "$((t1 - t0))" "$log.out" "$log.err" <<'EOF'
import json, sys
p, ws, rc, wall, out, err = sys.argv[1:]
line = ""
for l in reversed(open(out, errors="replace").read().splitlines()):
    if l.startswith("{"):
        line = l
        break
if not line:
    tail = open(err, errors="replace").read().strip().splitlines()[-1:] or ["no output"]
    what = "timeout" if rc in ("124", "137") else f"no result (rc {rc})"
    print(f"{p:30s} {ws:3s} {what:26s} {tail[0][:150]} ({wall} s)")
    sys.exit(0)
d = json.loads(line)
if d.get("correct"):
    s, lo, hi = d.get("speedup"), d.get("speedup_ci_low"), d.get("speedup_ci_high")
    f = lambda v: "-" if v is None else f"{v:.3f}"
    verdict = "CORRECT"
    msg = f"{f(s)} [{f(lo)}, {f(hi)}] cand {f(d.get('candidate_ms'))} ms ref {f(d.get('reference_ms'))} ms"
else:
    verdict = f"FAILED ({d.get('failure')})"
    msg = (d.get("message") or "").strip().splitlines()[0][:150] if d.get("message") else ""
print(f"{p:30s} {ws:3s} {verdict:26s} {msg} ({wall} s)")
EOF
  done
done
echo "total $(( $(date +%s) - start )) s; JSON and logs in $OUTDIR"
