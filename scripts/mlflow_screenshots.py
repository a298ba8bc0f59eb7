"""Screenshots of a sweep's MLflow UI with headless Chromium: the runs table in `pkb ui`'s
view and the sweep's heatmap, for a person to look at (issue 12, item 4).

    # a CPU sweep that has something to compare (the reference and a scripted model whose
    # answers fail in different ways), then its screenshots:
    python3 scripts/mlflow_screenshots.py --cpu-sweep /tmp/shots --out benchmarks/results/mlflow_ui_cpu

    # a store brought back from a GPU machine (artifact paths rebased to where it lies now):
    python3 scripts/mlflow_screenshots.py --db /path/mlflow.db \
        --rebase /tmp/out/mlartifacts=/path/mlartifacts --out benchmarks/results/mlflow_ui_gpu

    # a store that came back without its artifact folder: report files rebuilt from its cells
    python3 scripts/mlflow_screenshots.py --db /path/mlflow.db --rebase /root/out/gpu_mlflow=/tmp/x \
        --rebuild gpu_compare --out benchmarks/results/mlflow_ui_gpu

Needs `chromium` (apt-get install -y chromium). Writes <sweep>_runs.png, <sweep>_heatmap.png
and <sweep>_problems.png (the parent run's per-problem table) into --out.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import urllib.request
from pathlib import Path

from pkb_ray.tracking.ui import app_registered, experiments, open_url, server_command, server_env, wait_until_up

REPO = Path(__file__).resolve().parents[1]

WINDOW = "2400,1000"


def chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if shutil.which(name):
            return name
    sys.exit("no chromium: apt-get install -y chromium")


def screenshot(url: str, path: Path, window: str = WINDOW) -> None:
    # virtual-time-budget lets the single-page app fetch and render before the capture.
    subprocess.run([chromium(), "--headless=new", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                    f"--window-size={window}", "--virtual-time-budget=25000",
                    f"--screenshot={path}", url], check=True, capture_output=True, timeout=180)
    print(f"wrote {path}")


def rebase_artifacts(db: Path, pairs: list[str]) -> None:
    """Point artifact locations recorded on another machine at where they lie here."""
    con = sqlite3.connect(db)
    for pair in pairs:
        old, new = pair.split("=", 1)
        for table, col in (("experiments", "artifact_location"), ("runs", "artifact_uri")):
            con.execute(f"UPDATE {table} SET {col} = replace({col}, ?, ?)", (old, new))
    con.commit()
    con.close()


def refresh_views(db: Path) -> None:
    from mlflow.tracking import MlflowClient

    from pkb_ray.tracking.mlflow_tracker import EXPERIMENT_KIND_TAG, TRAINING_KIND, VIEW_TAG, runs_view

    client = MlflowClient(tracking_uri=f"sqlite:///{db}")
    for exp in client.search_experiments():
        if exp.name != "Default":
            client.set_experiment_tag(exp.experiment_id, VIEW_TAG, json.dumps(runs_view()))
            client.set_experiment_tag(exp.experiment_id, EXPERIMENT_KIND_TAG, TRAINING_KIND)


def parent_run(base: str, experiment_id: str) -> str | None:
    body = json.dumps({"experiment_ids": [experiment_id], "filter": "tags.`pkb.kind` = 'sweep'",
                       "order_by": ["attributes.start_time DESC"], "max_results": 1}).encode()
    req = urllib.request.Request(base + "/ajax-api/2.0/mlflow/runs/search", data=body, method="POST",
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as resp:
        runs = json.load(resp).get("runs", [])
    return runs[0]["info"]["run_id"] if runs else None


# -- the CPU sweep -------------------------------------------------------------------------
BROKEN = {
    "allreduce": "import torch\nimport torch.distributed as dist\n\n\ndef solution(x):\n"
                 "    out = x.clone()\n    dist.all_reduce(out)\n    return out\n",   # forbidden_api
    "allgather": "import torch\n\n\ndef solution(x):\n    return x.clone()\n",      # incorrect
    "reduce_scatter": "import torch\n\n\ndef solution(x):\n    return x[:\n",        # parse_error
    "alltoall": "import torch\n\n\ndef solution(x):\n    raise RuntimeError('no')\n",  # runtime_error
}


def _scripted_answer(body: dict):
    from tests.scripted_server import Reply

    text = body["messages"][-1]["content"]
    for pid, code in BROKEN.items():
        if f"(`{pid}`)" in text:
            return Reply(text=f"```python\n{code}```\n")
    return Reply()  # the server's default: `return x.clone()`


def run_cpu_sweep(workdir: Path) -> Path:
    """Two invocations into one sweep `cpu_compare`: the reference (correct, CPU timings) and
    a scripted OpenAI-compatible model whose answers fail in different classes."""
    from tests.scripted_server import ScriptedServer

    workdir.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, PYTHONPATH=f"{REPO}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    common = ["problems=collectives", "eval.device=cpu", "sweep.name=cpu_compare", "sweep.progress=false"]
    with ScriptedServer(default=_scripted_answer) as server:
        for model in (["model=reference"],
                      ["model=openai_compatible", f"model.api_base={server.url}", "model.model_id=scripted"]):
            subprocess.run([sys.executable, str(REPO / "sweep.py"), *model, *common], cwd=workdir,
                           env=env, check=True)
    return workdir / "mlflow.db"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--db", type=Path, help="an MLflow SQLite store")
    ap.add_argument("--cpu-sweep", type=Path, help="run the CPU comparison sweep in this directory first")
    ap.add_argument("--rebase", action="append", default=[], metavar="OLD=NEW",
                    help="rewrite artifact paths (the store is always used on a copy)")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--port", type=int, default=5077)
    ap.add_argument("--window", default=WINDOW, help=f"the runs table's window, W,H px (default {WINDOW})")
    ap.add_argument("--rebuild", metavar="EXPERIMENT",
                    help="the store came back without its artifacts: rebuild the report files from its "
                         "cell runs first (scripts/mlflow_rebuild_artifacts.py) and show those")
    args = ap.parse_args()
    db = run_cpu_sweep(args.cpu_sweep) if args.cpu_sweep else args.db
    if db is None or not db.exists():
        ap.error("give --db PATH or --cpu-sweep DIR")
    # On a copy: artifact paths rebased, and every experiment's saved view set to the
    # current one (a store made by an older pkb_ray has an older view or none).
    copy = Path(tempfile.mkdtemp()) / "mlflow.db"
    shutil.copy(db, copy)
    rebase_artifacts(copy, args.rebase)
    refresh_views(copy)
    db = copy
    artifact_dir = ""
    if args.rebuild:
        subprocess.run([sys.executable, str(REPO / "scripts" / "mlflow_rebuild_artifacts.py"), "--db", str(db),
                        "--experiment", args.rebuild], check=True)
        artifact_dir = "rebuilt/"
    args.out.mkdir(parents=True, exist_ok=True)
    base = f"http://127.0.0.1:{args.port}"
    with_app = app_registered()  # the page `pkb ui` opens (a fresh browser profile: a first visit)
    server = subprocess.Popen(server_command(f"sqlite:///{db.resolve()}", "127.0.0.1", args.port, with_app),
                              env=server_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        print(f"MLflow UI up in {wait_until_up(base, 180, server):.1f} s")
        for exp in experiments(base):
            if exp["name"] == "Default":
                continue
            name, eid = exp["name"], exp["experiment_id"]
            screenshot(open_url(base, eid, with_app), args.out / f"{name}_runs.png", window=args.window)
            run_id = parent_run(base, eid)
            if run_id:
                for artifact, suffix in (("heatmap.png", "heatmap"), ("leaderboard_problems.csv", "problems")):
                    screenshot(f"{base}/#/experiments/{eid}/runs/{run_id}/artifacts/{artifact_dir}{artifact}"
                               "?workflowType=machine_learning", args.out / f"{name}_{suffix}.png",
                               window="2000,1100")
    finally:
        server.terminate()
        server.wait(timeout=30)
    return 0


if __name__ == "__main__":
    sys.exit(main())
