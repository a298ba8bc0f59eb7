#!/usr/bin/env bash
# The sweep as a user runs it on a 4-GPU node, at world size 2 then 4, with MLflow on SQLite:
# issue 40's acceptance run. From the repository root, with .devsite_sweep and .devtools
# carried (scripts/device/README.md):
#   bash scripts/device/sweep_gpu.sh                  # problems=representative, ws 2 then 4
#   DEVICE=cpu PROBLEMS=smoke WORLD_SIZES=2 bash scripts/device/sweep_gpu.sh   # the plumbing, on CPU
#                                                     # (model=reference: the experts need CUDA)
# Settings (environment): PROBLEMS (default representative: the 8 of its 12 problems with an
# expert), WORLD_SIZES (default "2 4"), SWEEP_TIMEOUT_S (default 250, per world size: the
# dry run estimates 67 s at ws 2 and 87 s at ws 4 on 4 x H200, plus cold compiles; two fit a
# 600 s call), DEVICE (cuda; cpu skips the machine set-up and uses this Python's packages).
# Prints each sweep's tail, where co-tenancy shows (the `co_tenancy` metric of every cell's
# MLflow run, and the leaderboard's facts line), and leaves ONE file, $OUT/sweep_gpu.tgz:
# both sweeps' journals and leaderboards, mlflow.db and the logs.
set -u
cd "$(dirname "$0")/../.."
REPO=$PWD
DEVICE=${DEVICE:-cuda}
PROBLEMS=${PROBLEMS:-representative}
MODEL=${MODEL:-$([ "$DEVICE" = cpu ] && echo reference || echo expert)}
WORLD_SIZES=${WORLD_SIZES:-"2 4"}
SWEEP_TIMEOUT_S=${SWEEP_TIMEOUT_S:-250}
OUTDIR=${OUT:-/tmp/sweep_gpu_out}
WORK=$(mktemp -d /tmp/sweep_gpu.XXXXXX)
mkdir -p "$OUTDIR" "$WORK/logs"
source scripts/device/device_env.sh sweep_gpu "ray, mlflow, hydra, torch" || exit 2
python3 -c "import ray, mlflow, torch; print('ray', ray.__version__, 'mlflow', mlflow.__version__, 'torch', torch.__version__)"
start=$(date +%s)
for ws in $WORLD_SIZES; do
  name=rep_ws$ws
  echo "=== python3 sweep.py problems=$PROBLEMS eval.world_size=$ws ($((  $(date +%s) - start )) s in)"
  # cwd is $WORK: mlflow.db (tracking.uri sqlite:///mlflow.db) and mlartifacts land there.
  (cd "$WORK" && timeout -k 10 "$SWEEP_TIMEOUT_S" python3 "$REPO/sweep.py" "model=$MODEL" "problems=$PROBLEMS" \
     "eval.world_size=$ws" "eval.device=$DEVICE" "sweep.name=$name" "sweep.root=$WORK/sweeps" \
     sweep.progress=false) >"$WORK/logs/$name.out" 2>"$WORK/logs/$name.err"
  rc=$?
  [ "$rc" = 0 ] || failed="${failed:-} ws$ws"
  echo "exit $rc after $(( $(date +%s) - start )) s"
  tail -n 25 "$WORK/logs/$name.out"
  [ "$rc" = 0 ] || tail -n 25 "$WORK/logs/$name.err"
done
echo "=== co-tenancy in MLflow (metric co_tenancy of each cell's run: other evaluations beside it)"
(cd "$WORK" && python3 - <<'EOF'
from mlflow.tracking import MlflowClient
c = MlflowClient(tracking_uri="sqlite:///mlflow.db")
for e in c.search_experiments():
    for r in c.search_runs([e.experiment_id], order_by=["attributes.start_time ASC"]):
        m = r.data.metrics
        if "co_tenancy" not in m and "correct" not in m:
            continue  # the sweep's parent run
        print(f"{e.name:10s} {r.info.run_name[:48]:48s} correct={m.get('correct')} "
              f"co_tenancy={m.get('co_tenancy')} speedup={m.get('speedup')} node_s={m.get('node_seconds')}")
EOF
)
echo "=== co-tenancy in the leaderboards"
for f in "$WORK"/sweeps/*/leaderboard.md; do
  [ -f "$f" ] || continue
  lines=$(grep -i -E "co-tenancy|beside|alone|exclusive" "$f" | head -8)
  echo "--- $f"; echo "${lines:-(no co-tenancy line: the leaderboard names it only when a cell ran beside another)}"
done
for n in $(ls "$WORK/sweeps" 2>/dev/null); do
  python3 -m pkb_ray.cli report "$n" --root "$WORK/sweeps" --split-co-tenancy >"$WORK/logs/report_split_$n.txt" 2>&1 \
    && { echo "--- pkb report $n --split-co-tenancy (logs/report_split_$n.txt):"; grep -i "co-tenancy" "$WORK/logs/report_split_$n.txt" | head -6; }
done
tar czf "$OUTDIR/sweep_gpu.tgz" -C "$WORK" .
ls -la "$OUTDIR/sweep_gpu.tgz"
echo "total $(( $(date +%s) - start )) s${failed:+; FAILED:$failed}"
[ -z "${failed:-}" ]
