"""Rebuild a sweep's report files (heatmap, per-problem table, leaderboard) from the cell
runs of an MLflow store whose artifact folder did not come back with it, and log them to the
sweep's parent run under `rebuilt/`. Run it on a copy whose artifact paths point here
(scripts/mlflow_screenshots.py --rebuild does both).

Why: the device tool brings back a GPU machine's files but not deep folders, so a GPU
sweep's store can return without its artifacts and its journal (2026-11-23). The cell runs
keep what the report needs (status, failure class, speedups, settings as params). The files
are logged under `rebuilt/` and the parent run is tagged `pkb.rebuilt_from_store`, so nobody
mistakes them for what the sweep wrote.

    python3 scripts/mlflow_rebuild_artifacts.py --db COPY/mlflow.db --experiment gpu_compare
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

from pkb_ray.records import CellKey, CellResult, CellStatus, EvalResult, FailureClass, Generation
from pkb_ray.report.leaderboard import build_report

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

# Metrics a cell run carries that map one to one onto the evaluation record.
_EVAL_METRICS = ("candidate_ms", "reference_ms", "speedup", "roofline_fraction", "speedup_ci_low",
                 "speedup_ci_high", "node_seconds")
# Params that are the cell's identity (what the report's header reads).
_IDENTITY = ("device", "world_size", "size", "trials", "harness_version", "problems_source", "transport")


def cell_from_run(run) -> CellResult:
    p, m, t = run.data.params, run.data.metrics, run.data.tags
    failure = t.get("failure_class")
    failure_class = FailureClass(failure) if failure and failure != "none" else None
    key = CellKey(p["model"], p["problem"], int(p["attempt"]), p.get("mode", "zeroshot"))
    evaluation = EvalResult(
        correct=bool(m.get("correct")), failure=failure_class, message=t.get("failure_message", ""),
        compiled=bool(m.get("compiled")), world_size=int(p.get("world_size", 0)), device=p.get("device", ""),
        size=p.get("size", ""), hardware_fingerprint=p.get("hardware_fingerprint", ""),
        harness_version=p.get("harness_version", ""), trials=int(p.get("trials", 0)),
        **{k: m[k] for k in _EVAL_METRICS if k in m})
    return CellResult(
        key=key, status=CellStatus(t["status"]), failure=failure_class, message=t.get("failure_message", ""),
        generation=Generation(model=key.model, problem=key.problem, attempt=key.attempt),
        evaluation=evaluation, world_size=evaluation.world_size,
        hardware_fingerprint=evaluation.hardware_fingerprint, harness_version=evaluation.harness_version,
        identity={k: p[k] for k in _IDENTITY if k in p}, category=p.get("category", ""))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--db", type=Path, required=True)
    ap.add_argument("--experiment", required=True)
    args = ap.parse_args()
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=f"sqlite:///{args.db.resolve()}")
    exp = client.get_experiment_by_name(args.experiment)
    if exp is None:
        ap.error(f"no experiment {args.experiment!r} in {args.db}")
    runs = client.search_runs([exp.experiment_id], max_results=5000)
    cells = [cell_from_run(r) for r in runs if r.data.tags.get("pkb.kind") == "cell"]
    parents = [r for r in runs if r.data.tags.get("pkb.kind") == "sweep"]
    if not cells or not parents:
        ap.error(f"experiment {args.experiment!r} has {len(cells)} cell runs and {len(parents)} sweep runs")
    parent = max(parents, key=lambda r: r.info.start_time)
    out = Path(tempfile.mkdtemp(prefix="pkb_rebuilt_"))
    report = build_report(cells, out, title=f"{args.experiment} (rebuilt from the MLflow store)")
    for path in report.files():
        client.log_artifact(parent.info.run_id, str(path), artifact_path="rebuilt")
    client.set_tag(parent.info.run_id, "pkb.rebuilt_from_store", "heatmap and tables under rebuilt/, "
                   "made from the cell runs because the sweep's own artifacts did not come back")
    print(f"{len(cells)} cells; logged {out} to run {parent.info.run_id} under rebuilt/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
