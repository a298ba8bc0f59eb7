"""Proves a sweep pack (scripts/device/pack_sweep_site.sh) is all a GPU machine lacks, on CPU.

    bash scripts/device/pack_sweep_site.sh --python-version 3.11 /tmp/sp
    python3 scripts/device/check_sweep_pack.py /tmp/sp/sweep-py311.txz [--steps ray sweep tools]

The pack is unpacked and used by a venv made without site-packages whose PYTHONPATH holds only
the pack, a stand-in directory and this repo, so an import of anything else fails. The stand-in
links this machine's copies of what the GPU image holds: the packages the pack script leaves
out (its IMAGE_HAS list, read from the script) and IMAGE_ALSO below (torch, pytest, scipy,
matplotlib, pandas, rich and what they import). In that
interpreter, on CPU:
  ray    ray.init(address="local") (as pkb_ray starts it), a remote actor, a placement group;
  sweep  `python3 sweep.py model=reference problems=smoke eval.device=cpu` with MLflow on
         SQLite, then the runs read back from mlflow.db;
  tools  scripts/bench_tools_sweep.py --device cpu --episodes 2: a tools-mode sweep whose
         model is the scripted ToolServer, called through litellm.
The pack must be built for this machine's Python (the GPU image's is 3.12; this check runs
the same cuts built for the Python here). Exit 0 when every step passed.
"""

from __future__ import annotations

import argparse
import importlib.metadata as md
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PACK_SCRIPT = REPO / "scripts" / "device" / "pack_sweep_site.sh"
# More of the image that pkb_ray itself imports: torch, pytest, and the report's plots and statistics.
IMAGE_ALSO = ["torch", "numpy", "sympy", "mpmath", "networkx", "jinja2", "markupsafe", "filelock", "fsspec",
              "typing_extensions", "pytest", "pluggy", "iniconfig", "packaging", "scipy", "matplotlib",
              "contourpy", "cycler", "fonttools", "kiwisolver", "pillow", "pyparsing", "python-dateutil", "six",
              "pandas", "rich", "markdown-it-py", "mdurl", "pygments"]

RAY_CHILD = r"""
import logging, os, ray
from ray.util.placement_group import placement_group
ray.init(address="local", num_cpus=2, include_dashboard=False, logging_level=logging.WARNING,
         log_to_driver=False)

@ray.remote
class Counter:
    def __init__(self):
        self.n = 0
    def add(self, k):
        self.n += k
        return self.n, os.environ.get("PKB_CHECK")

c = Counter.options(runtime_env={"env_vars": {"PKB_CHECK": "yes"}}).remote()
print("actor:", ray.get([c.add.remote(1), c.add.remote(2)]))
pg = placement_group([{"CPU": 1}], strategy="STRICT_PACK")
ray.get(pg.ready(), timeout=60)
print("placement group ready:", pg.bundle_specs)
ray.shutdown()
"""

MLFLOW_CHILD = r"""
from mlflow.tracking import MlflowClient
c = MlflowClient(tracking_uri="sqlite:///mlflow.db")
exps = c.search_experiments()
runs = [r for e in exps for r in c.search_runs([e.experiment_id])]
print("experiments:", [e.name for e in exps], "runs:", len(runs))
print("statuses:", sorted({r.data.tags.get("status", r.info.status) for r in runs}))
assert runs, "no run recorded"
"""


def image_has() -> list[str]:
    """The IMAGE_HAS list of the pack script: distributions the pack leaves to the image."""
    m = re.search(r'IMAGE_HAS="([^"]*)"', PACK_SCRIPT.read_text())
    return m.group(1).split() if m else []


def link_dists(names: list[str], standin: Path) -> list[str]:
    """Links each distribution's top-level files and metadata into `standin`; returns those missing here."""
    missing = []
    for name in names:
        try:
            dist = md.distribution(name)
        except md.PackageNotFoundError:
            missing.append(name)
            continue
        for top in {Path(str(f)).parts[0] for f in dist.files or [] if not str(f).startswith("..")}:
            src = Path(dist.locate_file(top))
            if src.exists() and not (standin / top).exists():
                (standin / top).symlink_to(src)
    return missing


def step(name: str, cmd: list[str], env: dict, cwd: Path, timeout_s: float) -> bool:
    t0 = time.monotonic()
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout_s)
    wall = time.monotonic() - t0
    tail = (proc.stdout[-2500:] + ("\n--- stderr\n" + proc.stderr[-2500:] if proc.returncode else "")).strip()
    print(f"=== {name}: exit {proc.returncode} in {wall:.0f} s\n{tail}\n", flush=True)
    return proc.returncode == 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("pack", help="a .txz from pack_sweep_site.sh built for this Python's version, or the folder it unpacks to")
    ap.add_argument("--steps", nargs="+", default=["ray", "sweep", "tools"], choices=["ray", "sweep", "tools"])
    ap.add_argument("--keep", action="store_true", help="keep the work folder (printed) for a look")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="pkb_sweep_pack_check_"))
    try:
        return check(Path(args.pack).resolve(), work, args.steps)
    finally:
        if args.keep:
            print("work folder:", work)
        else:
            shutil.rmtree(work, ignore_errors=True)


def check(pack_file: Path, work: Path, steps: list[str]) -> int:
    pack, standin, venv, run = work / "pack", work / "standin", work / "venv", work / "run"
    for d in (pack, standin, run):
        d.mkdir()
    if pack_file.is_dir():  # an unpacked pack: trying a cut without packing again
        pack.rmdir()
        pack.symlink_to(pack_file)
    else:
        with tarfile.open(pack_file) as tar:
            tar.extractall(pack, filter="data")
    missing = link_dists(image_has() + IMAGE_ALSO, standin)
    if missing:
        print("not installed here, so not in the stand-in:", " ".join(missing))
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    py = str(venv / "bin" / "python")
    env = {"PATH": f"{venv / 'bin'}:/usr/bin:/bin", "HOME": str(work), "PYTHONNOUSERSITE": "1",
           "PYTHONPATH": os.pathsep.join([str(pack), str(standin), str(REPO)]),
           "LITELLM_LOCAL_MODEL_COST_MAP": "True", "RAY_USAGE_STATS_ENABLED": "0"}
    ok = True
    if "ray" in steps:
        ok &= step("ray: init, actor, placement group", [py, "-c", RAY_CHILD], env, run, 240)
    if "sweep" in steps:
        ok &= step("sweep: smoke problems on CPU, MLflow on SQLite",
                   [py, str(REPO / "sweep.py"), "model=reference", "problems=smoke", "eval.device=cpu",
                    "attempts=1", "sweep.progress=false", f"eval.cache_dir={work / 'ext'}",
                    f"sweep.root={work / 'sweeps'}"], env, run, 900)
        ok &= step("sweep: runs read back from mlflow.db", [py, "-c", MLFLOW_CHILD], env, run, 120)
    if "tools" in steps:
        ok &= step("tools: scripted tool episodes through litellm",
                   [py, "-m", "scripts.bench_tools_sweep", "--device", "cpu", "--episodes", "2",
                    "--cache-dir", str(work / "ext"), "--out", str(work / "results")], env, REPO, 900)
    print("OK: the pack and the image's packages are enough" if ok else "FAILED: see above")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
