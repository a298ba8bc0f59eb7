"""A mixed sweep on one node (issue 44): zero-shot cells and scripted tool episodes at once,
both sweeps on the node's shared actor (cluster.share_nodes), the tools sweep SIGKILLed
mid-way and re-run.

    python3 -m scripts.device.mixed_sweep --device cuda     # experts + 8 allreduce episodes, 4 GPUs
    python3 -m scripts.device.mixed_sweep --device cpu      # reference + 3 sum_ranks episodes, gloo

One Ray cluster is started here (ray.cluster_utils, so that only this process's Ray stops at
the end; on cpu with 4 fake GPU resources, as tests/engine/test_node_groups.py fakes them).
Two `sweep.py` processes join it. With --sharing shared (the default) both set
`cluster.share_nodes=true`: one actor holds the whole node (engine/node/shared_nodes.py) and
lends its GPU groups (two of world size 2 on 4 GPUs) to whichever sweep's evaluation or tool
call is ready, so once the zero-shot cells run out the tool calls take both groups. With
--sharing static each sets `cluster.node_gpus=--node-gpus` (one group each; Ray books the
two shares disjoint), and a share idles once its sweep is done: the figure to compare with.
  - zero-shot: model=expert (cuda; reference on cpu), --zs-problems x --zs-attempts cells;
  - tools: --episodes scripted episodes (the ToolServer of scripts/bench_tools_sweep.py:
    check(wrong) -> benchmark + profile(good) -> run(script) -> submit(good)), with
    model.max_concurrency = episodes, so tool calls queue on the group while episodes wait
    for the model.
Each sweep has its own directory, journal and MLflow store (sqlite). Once --kill-after tool
results are in the episodes' journals and a tool call is in flight, the tools sweep's
process group gets SIGKILL; the same command is started again at once.

Checked (exit 1 when one fails):
  - each journal holds every cell once, all correct;
  - no finished tool call ran twice (a call_id with a tool_result before the kill has one
    tool_start in all), every call_id has one tool_result;
  - no model request repeated: the ToolServer received each episode's 4 steps once
    (steps 1..4, `episodes` times each);
  - MLflow: one active run per cell, each tool-call step's `turn_*` metric logged once, and
    each tools cell's `tool_device_s` (its episode's GPU-seconds) equal to its journal's
    sum of turn device_s and above 0;
  - shared: every zero-shot evaluation and every tools submission records its co_tenancy
    (a static share records None: it cannot see the other sweep's work).

GPU-slot utilisation, from the journals: the seconds the GPU groups were held by an evaluation
(a zero-shot cell's `evaluation.node_seconds`, timed inside the group's lease) or a tool call
(a `tool_result`'s `wall_s`, timed inside `run_tool`'s lease), summed, over the mixed sweep's
wall time W (both sweeps launched -> the last one exits, the kill and the re-run's start
included). Tool calls cut short by the kill count as not held (their work was lost; on the
shared actor such a call runs to its end, unread, holding its group). The mixed figure is the
held seconds over (groups x W), groups: the node's GPUs over the world size (shared), or one
per sweep (static); per kind, the mean number of groups it held (held seconds over W). Which
groups each kind's results ran on is listed too. On cuda, nvidia-smi's utilization.gpu every
200 ms per GPU as well (fraction of samples above 0): busy, a different thing from held. Writes
mixed_sweep_<device>.json to --out.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from pkb_ray.engine.node.shared_cli import on_cluster
from scripts.bench_tools_sweep import (CPU_FAST_TIMING, GpuSampler, journal_records, problem_for, script_for,
                                      sweep_env, tools_sweep_overrides)
from tests.agent.tool_server import ToolServer, step_of
from tests.kill import kill_when

REPO = Path(__file__).resolve().parents[2]
STEPS = 4
"""Model requests per scripted episode (script_for: check, benchmark + profile, run, submit)."""


def zeroshot_overrides(args: argparse.Namespace, work: Path, shared: list[str]) -> list[str]:
    model = "expert" if args.device == "cuda" else "reference"  # the expert is CUDA only
    problems = (["problems=auto"] if args.zs_problems == "auto"
                else [f"problems.ids=[{args.zs_problems}]"])
    out = [f"model={model}", *problems, f"attempts={args.zs_attempts}", f"eval.device={args.device}",
           f"eval.world_size={args.world_size}", f"eval.cache_dir={args.cache_dir}",
           f"generation.cache_dir={work / 'kernels_cache'}", f"sweep.root={work / 'sweeps'}", "sweep.name=mixed_zs",
           "sweep.progress=false", *shared, f"tracking.uri=sqlite:///{work / 'mlflow.db'}"]
    return out + (CPU_FAST_TIMING if args.device == "cpu" else [])


def tools_overrides(args: argparse.Namespace, work: Path, shared: list[str]) -> list[str]:
    problem, source, _ = problem_for(args.device)
    out = tools_sweep_overrides(args, problem, source, work, "mixed_tools", args.episodes,
                                [f"model.max_concurrency={args.episodes}", *shared,
                                 f"tracking.uri=sqlite:///{work / 'mlflow.db'}"])
    return [o for o in out if o != "tracking.enabled=false"]


def mlflow_check(db: Path, cells: list) -> dict:
    """One active run per cell; each `turn_*` metric once per step; tools cells' tool_device_s."""
    if not db.exists():
        return {"ok": False, "error": f"{db} missing"}
    con = sqlite3.connect(db)
    runs = con.execute("SELECT t.value, COUNT(*) FROM runs r JOIN tags t ON t.run_uuid = r.run_uuid "
                       "AND t.key = 'pkb.cell_id' WHERE r.lifecycle_stage = 'active' GROUP BY t.value").fetchall()
    repeated_steps = con.execute("SELECT key, step, COUNT(*) FROM metrics WHERE key LIKE 'turn_%' "
                                 "GROUP BY run_uuid, key, step HAVING COUNT(*) > 1").fetchall()
    steps = con.execute("SELECT t.value, COUNT(DISTINCT m.step) FROM metrics m JOIN tags t ON t.run_uuid = m.run_uuid "
                        "AND t.key = 'pkb.cell_id' WHERE m.key = 'turn_device_s' GROUP BY t.value").fetchall()
    tool_s = dict(con.execute("SELECT t.value, m.value FROM metrics m JOIN tags t ON t.run_uuid = m.run_uuid "
                              "AND t.key = 'pkb.cell_id' WHERE m.key = 'tool_device_s'").fetchall())
    con.close()
    per_cell = dict(runs)
    want = {c.key.cell_id for c in cells}
    out = {"runs": len(per_cell), "cells": len(want), "repeated_turn_metrics": len(repeated_steps),
           "runs_not_once": sorted(k for k, n in per_cell.items() if n != 1),
           "cells_without_run": sorted(want - set(per_cell))}
    tool_cells = [c for c in cells if any(t.tool for t in c.turns)]
    if tool_cells:
        out["turn_steps_logged"] = sum(n for _, n in steps)
        out["turn_steps_journal"] = sum(len(c.turns) for c in tool_cells)
        out["tool_device_s"] = {c.key.cell_id: [round(tool_s.get(c.key.cell_id, -1.0), 3),
                                                round(sum(t.device_s for t in c.turns), 3)] for c in tool_cells}
        # MLflow's copy is rounded to 0.01 s by the tracker
        cost_ok = all(abs(m - j) <= 0.011 and j > 0 for m, j in out["tool_device_s"].values())
    else:
        cost_ok = True
    out["ok"] = (not out["runs_not_once"] and not out["cells_without_run"] and not repeated_steps
                 and len(per_cell) == len(want) and cost_ok
                 and out.get("turn_steps_logged") == out.get("turn_steps_journal"))
    return out


def node_gpu_count(cuda: bool) -> int:
    """The node's GPUs: nvidia-smi's on cuda, the 4 fake ones given to Ray on cpu."""
    if not cuda:
        return 4
    out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, check=True)
    return sum(1 for line in out.stdout.splitlines() if line.startswith("GPU "))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    ap.add_argument("--world-size", type=int, default=2)
    ap.add_argument("--sharing", choices=["shared", "static"], default="shared",
                    help="shared: both sweeps on the node's one shared actor (cluster.share_nodes); "
                         "static: each on its own share (cluster.node_gpus)")
    ap.add_argument("--node-gpus", type=int, default=2, help="static: each sweep's share of the node")
    ap.add_argument("--episodes", type=int, help="tool episodes (8 on cuda, 3 on cpu)")
    ap.add_argument("--zs-problems", help="`auto` or ids joined by commas (auto on cuda: every expert)")
    ap.add_argument("--zs-attempts", type=int, help="zero-shot attempts per problem (2 on cuda, 1 on cpu)")
    ap.add_argument("--kill-after", type=int, help="tool results before the SIGKILL (default: --episodes)")
    ap.add_argument("--min-utilisation", type=float, default=0.8, help="cuda: exit 1 below it")
    ap.add_argument("--timeout-s", type=float, default=540.0, help="for the whole run")
    ap.add_argument("--cache-dir", default=os.path.expanduser("~/.cache/pkb_ray"))
    ap.add_argument("--out", default=os.environ.get("OUT", "/tmp/mixed_sweep"))
    args = ap.parse_args()
    cuda = args.device == "cuda"
    args.episodes = args.episodes or (8 if cuda else 3)
    args.zs_problems = args.zs_problems or ("auto" if cuda else "allreduce,allgather,broadcast")
    args.zs_attempts = args.zs_attempts or (2 if cuda else 1)
    args.kill_after = args.kill_after or args.episodes
    _, _, good = problem_for(args.device)
    work = Path(tempfile.mkdtemp(prefix="pkb_mixed_"))
    zs_dir, tools_dir = work / "zeroshot", work / "tools"
    zs_dir.mkdir()
    tools_dir.mkdir()
    deadline = time.monotonic() + args.timeout_s

    from ray.cluster_utils import Cluster

    node_gpus = node_gpu_count(cuda)
    # Cluster.add_node defaults num_gpus to 0 (ray.cluster_utils), so the node's GPUs are named
    # here; on cpu they are fake resources: the GPU-group path, ranks on CPU.
    head = {"num_cpus": max(8, os.cpu_count() or 1), "num_gpus": node_gpus}
    cluster = Cluster(initialize_head=True, head_node_args=head)
    share = args.sharing == "shared"
    groups = node_gpus // args.world_size if share else 2 * (args.node_gpus // args.world_size)
    sharing = ["cluster.share_nodes=true"] if share else [f"cluster.node_gpus={args.node_gpus}"]
    shared = [f"cluster.address={cluster.address}", "cluster.evaluator_placement=gpu_node", *sharing,
              "tracking.enabled=true"]
    env = sweep_env()
    events: dict[str, float] = {}
    sampler = GpuSampler(work / "gpu_util.csv") if cuda else None
    kill_note = ""
    try:
        with ToolServer(script_for(good)) as server:
            zs_cmd = [sys.executable, str(REPO / "sweep.py"), *zeroshot_overrides(args, zs_dir, shared)]
            tools_cmd = [sys.executable, str(REPO / "sweep.py"), f"model.api_base={server.url}",
                         *tools_overrides(args, tools_dir, shared)]
            t0 = time.monotonic()

            def launch(cmd: list[str], cwd: Path, log: str) -> subprocess.Popen:
                return subprocess.Popen(cmd, cwd=cwd, env=env, stdout=open(work / log, "w"),
                                        stderr=subprocess.STDOUT, text=True, start_new_session=True)

            zs = launch(zs_cmd, zs_dir, "zeroshot.log")
            tools = launch(tools_cmd, tools_dir, "tools_1.log")
            sweep_dir = tools_dir / "sweeps" / "mixed_tools"

            def ready() -> bool:
                recs = journal_records(sweep_dir)
                done = {r["call_id"] for r in recs if r["kind"] == "tool_result"}
                started = {r["call_id"] for r in recs if r["kind"] == "tool_start"}
                return len(done) >= args.kill_after and bool(started - done)

            try:
                kill_when(tools, ready, timeout_s=max(1.0, deadline - time.monotonic()), group=True)
                events["killed_s"] = time.monotonic() - t0
            except AssertionError as exc:
                kill_note = f"no kill: {exc}"[:2000]
            before = journal_records(sweep_dir)
            bodies_at_kill = len(server.bodies)
            tools = launch(tools_cmd, tools_dir, "tools_2.log")
            rcs = {}
            for label, proc in (("zeroshot", zs), ("tools_rerun", tools)):
                try:
                    rcs[label] = proc.wait(timeout=max(1.0, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, 9)
                    rcs[label] = proc.wait()
                    kill_note += f" {label} ran past --timeout-s;"
                events[f"{label}_end_s"] = time.monotonic() - t0
            wall_s = time.monotonic() - t0
            bodies = list(server.bodies)
    finally:
        gpu = sampler.stop() if sampler else {}
        try:
            closed = on_cluster(cluster.address, "close") if share else []
        finally:
            cluster.shutdown()
    (work / "model_requests.json").write_text(json.dumps(bodies))

    from pkb_ray.store.journal import read_journal

    zs_journal, tools_journal = zs_dir / "sweeps" / "mixed_zs" / "journal.jsonl", sweep_dir / "journal.jsonl"
    zs_cells = read_journal(zs_journal) if zs_journal.exists() else []
    tool_cells = read_journal(tools_journal) if tools_journal.exists() else []
    after = journal_records(sweep_dir)
    finished_before = {r["call_id"] for r in before if r["kind"] == "tool_result"}
    starts = Counter(r["call_id"] for r in after if r["kind"] == "tool_start")
    results = Counter(r["call_id"] for r in after if r["kind"] == "tool_result")
    steps = Counter(step_of(b) for b in bodies)

    def journal_check(cells: list, lines: Path, want: int | None) -> dict:
        n_lines = len(lines.read_text().splitlines()) if lines.exists() else 0
        ids = [c.key.cell_id for c in cells]
        ok = n_lines == len(set(ids)) > 0 and all(c.status.value == "correct" for c in cells)
        return {"lines": n_lines, "cells": len(set(ids)), "correct": sum(c.status.value == "correct" for c in cells),
                "ok": ok and (want is None or len(set(ids)) == want)}

    zs_held = sum(c.evaluation.node_seconds for c in zs_cells if c.evaluation)
    tool_held = sum(r["wall_s"] for r in after if r["kind"] == "tool_result")
    util = {"zeroshot_groups": round(zs_held / wall_s, 3), "tools_groups": round(tool_held / wall_s, 3),
            "mixed": round((zs_held + tool_held) / (groups * wall_s), 3), "groups": groups,
            "zeroshot_held_s": round(zs_held, 1), "tools_held_s": round(tool_held, 1), "wall_s": round(wall_s, 1)}
    evaluated = {"zeroshot": [c.evaluation for c in zs_cells if c.evaluation],
                 "tools_submissions": [c.evaluation for c in tool_cells if c.evaluation]}
    placement = {kind: {"groups_used": dict(Counter(e.gpus for e in evs)),
                        "co_tenancy": dict(Counter(str(e.co_tenancy) for e in evs))}
                 for kind, evs in evaluated.items()}
    checks = {
        "killed_mid_sweep": bool(events.get("killed_s")) and bool(finished_before),
        "exit_codes": rcs,
        "zeroshot_journal": journal_check(zs_cells, zs_journal, None),
        "tools_journal": journal_check(tool_cells, tools_journal, args.episodes),
        "finished_tools_rerun": sorted(c for c in finished_before if starts[c] != 1),
        "calls_without_one_result": sorted(c for c in starts if results[c] != 1),
        "tool_calls": sum(results.values()),
        "tool_calls_restarted": sorted(c for c, n in starts.items() if n > 1),
        "model_requests": len(bodies), "model_requests_at_kill": bodies_at_kill,
        "requests_per_step": dict(sorted(steps.items())),
        "mlflow_zeroshot": mlflow_check(zs_dir / "mlflow.db", zs_cells),
        "mlflow_tools": mlflow_check(tools_dir / "mlflow.db", tool_cells),
        "placement": placement,
        "co_tenancy_recorded": all(e.co_tenancy is not None for evs in evaluated.values() for e in evs),
        "shared_actors_closed": closed,
    }
    ok = (checks["killed_mid_sweep"] and rcs == {"zeroshot": 0, "tools_rerun": 0}
          and checks["zeroshot_journal"]["ok"] and checks["tools_journal"]["ok"]
          and not checks["finished_tools_rerun"] and not checks["calls_without_one_result"]
          and steps == Counter({s: args.episodes for s in range(1, STEPS + 1)})
          and checks["mlflow_zeroshot"]["ok"] and checks["mlflow_tools"]["ok"]
          and (checks["co_tenancy_recorded"] or not share))
    util_ok = util["mixed"] >= args.min_utilisation or not cuda
    result = {"command": "python3 " + shlex.join(["-m", "scripts.device.mixed_sweep", *sys.argv[1:]]),
              "device": args.device, "sharing": args.sharing, "world_size": args.world_size,
              "node_gpus": node_gpus if share else args.node_gpus,
              "episodes": args.episodes, "zs_problems": args.zs_problems, "zs_attempts": args.zs_attempts,
              "kill_after": args.kill_after, "events_s": {k: round(v, 1) for k, v in events.items()},
              "note": kill_note.strip(), "utilisation": util, "gpu_busy_nvidia_smi": gpu, "checks": checks,
              "exact_resume": ok, "utilisation_ok": util_ok, "work": str(work),
              "cpus": os.cpu_count(), "load_average_1m": os.getloadavg()[0],
              "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"mixed_sweep_{args.device}.json").write_text(json.dumps(result, indent=1))
    for log in ("zeroshot.log", "tools_1.log", "tools_2.log"):
        if (work / log).exists():
            (out / log).write_text((work / log).read_text()[-200_000:])
    print(json.dumps({k: result[k] for k in ("events_s", "note", "utilisation", "gpu_busy_nvidia_smi")}, indent=1))
    c = checks
    print(f"zero-shot: {c['zeroshot_journal']}  tools: {c['tools_journal']}  exits {rcs}")
    print(f"killed at {events.get('killed_s', -1):.0f} s with {len(finished_before)} tool results, "
          f"{bodies_at_kill} model requests; after the re-run: {c['tool_calls']} tool calls, "
          f"{len(c['tool_calls_restarted'])} restarted (in flight at the kill), "
          f"{len(c['finished_tools_rerun'])} finished ones rerun; requests per step {c['requests_per_step']}")
    for side in ("mlflow_zeroshot", "mlflow_tools"):
        m = c[side]
        print(f"{side}: {m.get('runs')} runs for {m.get('cells')} cells, repeated turn metrics "
              f"{m.get('repeated_turn_metrics')}, turn steps {m.get('turn_steps_logged')}/{m.get('turn_steps_journal')}, "
              f"ok={m.get('ok')}")
    print(f"placement ({args.sharing}): {placement}; co_tenancy recorded: {c['co_tenancy_recorded']}")
    print(f"GPU-slot utilisation (held/wall, {groups} groups): mixed {util['mixed']} (zero-shot held "
          f"{util['zeroshot_groups']} groups on average, tools {util['tools_groups']}) over {util['wall_s']} s")
    print(f"MIXED SWEEP {'PASS' if ok and util_ok else 'FAIL'}: exact resume {ok}, "
          f"utilisation {util['mixed']} {'>=' if util['mixed'] >= args.min_utilisation else '<'} "
          f"{args.min_utilisation}{'' if cuda else ' (not required on cpu)'}")
    return 0 if ok and util_ok else 1


if __name__ == "__main__":
    sys.exit(main())
