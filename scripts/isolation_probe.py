"""What a candidate's sandbox holds of a multi-GPU node, and that honest code still runs there.

    PYTHONPATH=. python3 scripts/isolation_probe.py [--world-size 2] [--out FILE] [--hide-sysfs]

On a node of at least 2 x world-size GPUs (4 for the default), as root with bubblewrap:
  1. node: its GPUs in bus order (minor numbers), the sandbox plan, the cgroup layout;
  2. eval: the neighbour probe (tests/engine/adversarial/gpu/reaches_neighbour.py) as
     `pkb eval ... --world-size W` runs it (no CUDA_VISIBLE_DEVICES: the node's first W GPUs);
  3. grouped: the probe on two GPU groups at once, as a node actor lends them
     (engine/node/gpu_groups.py), each reporting what it sees;
  4. honest: the five collective experts and PyTorch's symmetric-memory one-shot
     all-reduce (tests/engine/fixtures/candidates/torch_symm/allreduce_one_shot.py), timed,
     first as `pkb eval` runs them, then two at a time on the two groups: each must be
     correct in its isolated sandbox (peer access and symmetric memory between its own GPUs).
Each probe reports: CUDA_VISIBLE_DEVICES inside, its own CUDA device count, a child's without
the variable, /dev/nvidiaN files listed and opened, NVML's count, /proc/driver/nvidia/gpus
entries and NVIDIA PCI functions in /sys. Isolated means every count equals W (/sys aside
unless --hide-sysfs). Prints one line per evaluation and writes everything as JSON to --out
(default benchmarks/results/isolation_probe_ws<W>.json).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PROBE = REPO / "tests" / "engine" / "adversarial" / "gpu" / "reaches_neighbour.py"
ONE_SHOT = REPO / "tests" / "engine" / "fixtures" / "candidates" / "torch_symm" / "allreduce_one_shot.py"
EXPERTS = ("allreduce", "allgather", "alltoall", "broadcast", "reduce_scatter")


def _request(problem: str, source: str, ws: int, cache_dir: str, timed: bool):
    from pkb_ray.config.schema import EvalConfig, TimeoutConfig, TimingConfig
    from pkb_ray.engine import EvalRequest

    return EvalRequest(problem_id=problem, problems_source="builtin", candidate_source=source, device="cuda",
                       size="bench" if timed else "small",
                       eval=EvalConfig(world_size=ws, trials=3 if timed else 1, time_candidates=timed,
                                       timing=TimingConfig(max_timing_s=5.0),
                                       timeouts=TimeoutConfig(start_s=120.0, load_s=300.0, trial_s=60.0, timing_s=120.0),
                                       cache_dir=cache_dir))


def reaches(text: str) -> dict | None:
    """The probe's report in a result's message or log (REACHES {...})."""
    at = text.find("REACHES {")
    return json.JSONDecoder().raw_decode(text, at + len("REACHES "))[0] if at >= 0 else None


def _row(tag: str, res, gpus: str) -> dict:
    seen = reaches(res.message + "\n" + res.log)
    row = {"tag": tag, "gpus": gpus or res.gpus, "correct": res.correct,
           "failure": res.failure.value if res.failure else None, "speedup": res.speedup,
           "ci": [res.speedup_ci_low, res.speedup_ci_high], "node_s": round(res.node_seconds, 2),
           "sandbox": res.sandbox, "message": res.message[:400]}
    if seen:
        row["seen"] = seen
    print(json.dumps({k: row[k] for k in ("tag", "gpus", "correct", "failure", "speedup")} |
                     ({"seen": row["seen"]} if "seen" in row else {})), flush=True)
    return row


def _isolated(row: dict, ws: int, sysfs: bool) -> bool:
    s = row.get("seen")
    if not s:
        return False
    counts = [s["torch_count"], s["child_count"], s["dev_nodes"], len(s["opened"]), s["proc_gpus"]]
    counts += [s["nvml_count"]] if s["nvml_count"] is not None else []
    counts += [s["sysfs_gpus"]] if sysfs else []
    return all(c == ws for c in counts)


def _node(ws: int) -> dict:
    from pkb_ray.engine import launch
    from pkb_ray.engine.launch import bounds

    run = bounds.run_group()
    smi = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True).stdout.strip().splitlines()
    return {"gpus": [vars(g) for g in launch.node_gpus()], "nvidia_smi": smi,
            "plan": launch.plan_sandbox("auto").description,
            "cgroups": {f: f"v{v} {d}" for f, (v, d) in run.group.dirs.items()}, "cgroups_missing": run.missing,
            "bounds": launch.sandbox_bounds(ws).__dict__, "kernel": os.uname().release}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--world-size", type=int, default=2)
    ap.add_argument("--out", default="")
    ap.add_argument("--hide-sysfs", action="store_true", help="PKB_SANDBOX_HIDE_GPU_SYSFS=1: mask other GPUs in /sys")
    ap.add_argument("--cache-dir", default="")
    args = ap.parse_args()
    ws = args.world_size
    os.environ.pop("CUDA_VISIBLE_DEVICES", None)  # as `pkb eval` on a node where none is set
    if args.hide_sysfs:
        os.environ["PKB_SANDBOX_HIDE_GPU_SYSFS"] = "1"
    from pkb_ray.engine import evaluate
    from pkb_ray.engine.node import gpu_groups
    from pkb_ray.problems.includes import read_candidate_file

    cache = args.cache_dir or tempfile.mkdtemp(prefix="pkb_isolation_cache_")
    out = {"command": " ".join([sys.executable] + sys.argv), "when": time.strftime("%Y-%m-%d %H:%M:%S"),
           "node": _node(ws), "eval": [], "grouped": [], "honest_eval": [], "honest_grouped": []}
    print(json.dumps(out["node"], indent=1), flush=True)
    probe = read_candidate_file(PROBE, root=REPO / "tests" / "engine")
    honest = [(p, read_candidate_file(REPO / "problems" / p / "expert.py")) for p in EXPERTS]
    honest.append(("allreduce", read_candidate_file(ONE_SHOT, root=REPO / "tests" / "engine")))
    names = [f"{p} expert" for p in EXPERTS] + ["allreduce torch one_shot_all_reduce"]

    # 2. as `pkb eval` runs it
    out["eval"].append(_row("probe eval", evaluate(_request("allreduce", probe, ws, cache, False)), ""))

    # 3. and 4. two groups at once
    gpus = [g["index"] for g in out["node"]["gpus"]]
    groups = gpu_groups.GpuGroups(gpus, gpu_groups.measure(gpus))
    slots = groups.slots(ws)
    lock = threading.Lock()

    def grouped(key: str, tag: str, problem: str, source: str, timed: bool) -> None:
        with groups.lend(ws) as lease:
            res = evaluate(_request(problem, source, ws, cache, timed), lease=lease)
            with lock:
                out[key].append(_row(tag, res, ",".join(map(str, lease.gpus))))

    threads = [threading.Thread(target=grouped, args=("grouped", f"probe group {i}", "allreduce", probe, False))
               for i in range(slots)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    for (problem, src), name in zip(honest, names):
        out["honest_eval"].append(_row(f"{name} eval", evaluate(_request(problem, src, ws, cache, True)), ""))
    jobs = list(zip(honest, names))
    for i in range(0, len(jobs), slots):
        threads = [threading.Thread(target=grouped, args=("honest_grouped", f"{name} grouped", p, src, True))
                   for (p, src), name in jobs[i:i + slots]]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

    probes = out["eval"] + out["grouped"]
    out["summary"] = {
        "slots": slots,
        "probes_isolated": [_isolated(r, ws, args.hide_sysfs) for r in probes],
        "honest_correct": [r["correct"] for r in out["honest_eval"] + out["honest_grouped"]],
    }
    ok = all(out["summary"]["probes_isolated"]) and all(out["summary"]["honest_correct"]) and len(probes) == 1 + slots
    out["summary"]["ok"] = ok
    path = Path(args.out or REPO / "benchmarks" / "results" / f"isolation_probe_ws{ws}.json")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out, indent=1))
    print(json.dumps(out["summary"]), f"-> {path}", flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
