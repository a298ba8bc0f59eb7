"""Cluster-scale benchmark (issue 26): the real driver, journal and MLflow on a local Ray
cluster of simulated GPU nodes, with SIMULATED evaluations.

    python scripts/bench_cluster.py --nodes 4 --gpus-per-node 8 --world-size 2 --json
    python scripts/bench_cluster.py --nodes 4 --gpus-per-node 8 --world-size 2 --json --exclusive

What is real: Ray (a local cluster of `--nodes` raylets, each with Ray's fake GPU resources),
the sweep driver (planning, the pipeline, slots, backpressure), the journal, MLflow on
SQLite, the node actors' GPU groups (engine/node/gpu_groups.py), resume and `pkb report`.
What is simulated: each evaluation holds its GPU group for a fixed duration drawn (by the
cell's id) from node-seconds measured on GPUs, multiplied by `--time-scale`; no rank runs.
The real evaluator is tested in tests/engine/test_node_groups.py. Models are 40 copies of
the `reference` pseudo-model (no API call), over every problem at the world size.

Figures (printed as JSON with --json, and written to benchmarks/results/ with the command):
  gpu_slot_utilization       GPU-seconds held by evaluations / (GPUs x the evaluation window)
  max_concurrent_per_node    the most evaluations one node ran at once
  driver_overhead_ms_per_cell the driver's CPU time in its pipeline thread while it ran the
                             plan, per recorded cell (submit, wait, record, journal, progress;
                             starting the actors included); the whole driver process
                             (MLflow's writer thread, Ray's threads) is
                             driver_process_cpu_ms_per_cell
  resume_s                   a second invocation of the finished sweep, to its exit
  resume_plan_s              planning against the whole journal (reading and checking every
                             record) when the finished-plan shortcut does not apply
  report_s                   `pkb report` on the journal, in a fresh process
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
import zlib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

MEASURED_NODE_SECONDS = (5.9, 6.9, 7.2, 7.7, 8.1, 8.8, 10.1)
"""Node-seconds of evaluations measured on GPUs: 5.9-8.1 s, five expert evaluations at world
size 2 on H200 (benchmarks/results/device_2026-11-22/gate/run4_suite/experts_journal.jsonl);
8.8 and 10.1 s, warm evaluations at world size 1 on H100 with timing v2
(benchmarks/results/timing_v2_2026-11-25/NOTES.md)."""


def simulated_evaluator(time_scale: float):
    """A node actor class that holds a real GPU group (the engine's GpuGroups, through the
    real NodeEvaluator's `groups`) for a simulated evaluation's duration instead of running
    one. Defined here and shipped to the actors by value."""
    import ray

    from pkb_ray.engine.node.node_evaluator import RAY_OPTIONS, _NodeEvaluator
    from pkb_ray.engine.version import HARNESS_VERSION
    from pkb_ray.records import EvalResult

    class SimulatedNodeEvaluator(_NodeEvaluator):
        def evaluate(self, request, build=None):
            with self.groups.lend(request.eval.world_size) as lease:
                start = time.time()
                pick = zlib.crc32(request.cell_id.encode()) % len(MEASURED_NODE_SECONDS)
                time.sleep(MEASURED_NODE_SECONDS[pick] * time_scale)
                end = time.time()
            return EvalResult(
                correct=True, compiled=True, candidate_ms=1.0, reference_ms=1.0, speedup=1.0,
                world_size=request.eval.world_size, device=request.device, size=request.size,
                hardware_fingerprint=self._fingerprint, harness_version=HARNESS_VERSION,
                trials=request.eval.trials, node_seconds=end - start,
                message="simulated evaluation (scripts/bench_cluster.py): no rank ran",
                sandbox="simulated: no process started",
                gpus=",".join(map(str, lease.gpus)), gpu_link=lease.link, sharing=lease.sharing,
                co_tenancy=lease.co_tenancy,
                evidence={"simulated": True, "start": start, "end": end,
                          "node": ray.get_runtime_context().get_node_id()})

    return ray.remote(**RAY_OPTIONS)(SimulatedNodeEvaluator)


def sim_models(n: int):
    """n copies of the `reference` pseudo-model, named sim00, sim01, ...: distinct cells, no
    API call, generation in microseconds."""
    from pkb_ray.generation.models import load_model_config

    ref = load_model_config("reference")
    return [dataclasses.replace(ref, name=f"sim{i:02d}") for i in range(n)]


def run_once(args, root: Path, overrides: list[str], evaluator_class=None, models=None) -> tuple[int, float, float, float]:
    """One invocation of the real driver: (exit status, wall s, and the pipeline's CPU
    seconds while it ran the plan: its own thread's, the whole driver process's)."""
    import pkb_ray.driver.sweep as sweep_mod
    from pkb_ray.config import compose_config
    from pkb_ray.driver.checks import Refused

    if models is not None:
        sweep_mod.sweep_models = lambda cfg, require_keys=True: models  # the bench's 40 pseudo-models
    t0 = time.perf_counter()
    sweep = sweep_mod.Sweep(compose_config(overrides))
    sweep.evaluator_class = evaluator_class
    try:
        plan = sweep.plan()
    except Refused as refused:
        return refused.status, time.perf_counter() - t0, 0.0, 0.0
    with sweep.open_sinks(plan):
        c0, p0 = time.thread_time(), time.process_time()
        sweep.run(plan)  # starting the actors, then every cell through the pipeline
        cpu = (time.thread_time() - c0, time.process_time() - p0)
        status = sweep.finish()
    return status, time.perf_counter() - t0, *cpu


def window_figures(journal: Path, gpus_per_node: int, nodes: int) -> dict:
    from pkb_ray.store.journal import read_journal

    spans = []
    for r in read_journal(journal):
        ev = r.evaluation
        if ev is not None and ev.evidence.get("simulated"):
            spans.append((ev.evidence["node"], ev.evidence["start"], ev.evidence["end"], ev.world_size))
    start, end = min(s for _, s, _, _ in spans), max(e for _, _, e, _ in spans)
    busy = sum((e - s) * ws for _, s, e, ws in spans)
    most = 0
    for node in {n for n, _, _, _ in spans}:
        events = sorted([(s, 1) for n, s, _, _ in spans if n == node] + [(e, -1) for n, _, e, _ in spans if n == node],
                        key=lambda x: (x[0], x[1]))
        now = 0
        for _, step in events:
            now += step
            most = max(most, now)
    return {"evaluations": len(spans), "evaluation_window_s": round(end - start, 1),
            "gpu_slot_utilization": round(busy / (nodes * gpus_per_node * (end - start)), 3),
            "max_concurrent_per_node": most,
            "max_co_tenancy_recorded": max(r.evaluation.co_tenancy or 0 for r in read_journal(journal)
                                           if r.evaluation is not None)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nodes", type=int, default=4)
    ap.add_argument("--gpus-per-node", type=int, default=8)
    ap.add_argument("--world-size", type=int, default=2)
    ap.add_argument("--models", type=int, default=40)
    ap.add_argument("--attempts", type=int, default=3)
    ap.add_argument("--problems", default="all", help="a conf/problems set (all: every problem)")
    ap.add_argument("--exclusive", action="store_true", help="eval.exclusive=true: one evaluation per node")
    ap.add_argument("--time-scale", type=float, default=0.05,
                    help="simulated evaluation = measured node-seconds x this (default 0.05: 0.3-0.5 s)")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    ap.add_argument("--out", default=str(REPO / "benchmarks" / "results"))
    args = ap.parse_args()

    import ray
    from ray.cluster_utils import Cluster

    tmp = Path(tempfile.mkdtemp(prefix="pkb_bench_cluster_"))
    root = tmp / "sweeps"
    name = "bench_cluster_exclusive" if args.exclusive else "bench_cluster"
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 4})
    for _ in range(args.nodes):
        cluster.add_node(num_cpus=2, num_gpus=args.gpus_per_node)
    cluster.wait_for_nodes()
    overrides = ["model=reference", f"problems={args.problems}", f"attempts={args.attempts}",
                 "eval.device=cpu", f"eval.world_size={args.world_size}", "eval.size=small",
                 f"eval.exclusive={str(args.exclusive).lower()}", "cluster.evaluator_placement=gpu_node",
                 f"cluster.address={cluster.address}", f"sweep.name={name}", f"sweep.root={root}",
                 "sweep.progress=false", f"tracking.uri=sqlite:///{tmp / 'mlflow.db'}"]
    models = sim_models(args.models)
    try:
        status, wall_s, thread_cpu_s, proc_cpu_s = run_once(args, root, overrides,
                                                            simulated_evaluator(args.time_scale), models)
        journal = root / name / "journal.jsonl"
        cells = sum(1 for _ in journal.open())
        figures = window_figures(journal, args.gpus_per_node, args.nodes)
        r_status, resume_s, _, _ = run_once(args, root, overrides, None, models)
        (root / name / "plan.json").unlink()  # no shortcut: read and check every record, plan
        import pkb_ray.driver.sweep as sweep_mod
        from pkb_ray.config import compose_config

        t = time.perf_counter()
        plan = sweep_mod.Sweep(compose_config(overrides)).plan()
        resume_plan_s = time.perf_counter() - t
        pending = len(plan.states())
    finally:
        ray.shutdown()
        cluster.shutdown()
    t = time.perf_counter()
    rep = subprocess.run([sys.executable, "-m", "pkb_ray.cli", "report", name, "--root", str(root)],
                         capture_output=True, text=True, cwd=tmp)
    report_s = time.perf_counter() - t

    out = {
        "simulated": (f"evaluations are SIMULATED: each holds its GPU group for measured node-seconds "
                      f"{list(MEASURED_NODE_SECONDS)} x {args.time_scale} (by cell id); driver, Ray, "
                      "journal, MLflow, GPU groups and resume are real"),
        "nodes": args.nodes, "gpus_per_node": args.gpus_per_node, "world_size": args.world_size,
        "exclusive": args.exclusive, "plan": f"{args.models} models x {args.problems} problems x {args.attempts} attempts",
        "cells": cells, "exit_status": status, "sweep_wall_s": round(wall_s, 1),
        **figures,
        "driver_overhead_ms_per_cell": round(thread_cpu_s * 1000 / max(1, cells), 2),
        "driver_process_cpu_ms_per_cell": round(proc_cpu_s * 1000 / max(1, cells), 2),
        "resume_s": round(resume_s, 2), "resume_exit_status": r_status,
        "resume_plan_s": round(resume_plan_s, 2), "pending_after_resume_plan": pending,
        "report_s": round(report_s, 2), "report_exit_status": rep.returncode,
        "machine": f"{platform.machine()}, {os.cpu_count()} cores",
        "command": "python scripts/bench_cluster.py " + " ".join(sys.argv[1:]),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }
    shutil.rmtree(tmp, ignore_errors=True)
    dest = Path(args.out)
    dest.mkdir(parents=True, exist_ok=True)
    stem = "bench_cluster_exclusive" if args.exclusive else "bench_cluster"
    (dest / f"{stem}.json").write_text(json.dumps(out, indent=2) + "\n")
    md = [f"# Cluster benchmark{' (exclusive)' if args.exclusive else ''}", "", f"Command: `{out['command']}`", "",
          f"**{out['simulated']}**", "", "| figure | value |", "|---|---|"]
    md += [f"| {k} | {v} |" for k, v in out.items() if k not in ("command", "simulated")]
    (dest / f"{stem}.md").write_text("\n".join(md) + "\n")
    if rep.returncode != 0:
        print(rep.stdout[-2000:], rep.stderr[-2000:], file=sys.stderr)
    print(json.dumps(out, indent=2) if args.json else "\n".join(f"{k}: {v}" for k, v in out.items()))
    return 0 if status == 0 and rep.returncode == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
