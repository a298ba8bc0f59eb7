"""Benchmark a tools-mode sweep: N scripted episodes on one node, as issue 17 asks (8 episodes;
each tool's median latency; how busy the node is).

    python -m scripts.bench_tools_sweep --device cpu                 # fixture sum_ranks, 2 gloo ranks
    python -m scripts.bench_tools_sweep --device cuda --episodes 8   # allreduce's expert, 2 GPUs

A scripted model on a real local HTTP server (tests/agent/tool_server.py) plays every
episode: check(a wrong module) -> benchmark(good) + profile(good) -> run(script) ->
submit(good), where "good" is the expert solution on cuda. The sweep is the real one
(`python sweep.py mode=tools attempts=N ...`, Ray started locally), so tool calls queue on the
node's evaluator with each other while episodes wait for the model.

Run it from the repo root as a module: the scripted server lives in the test suite.

Reported: per tool, the median and the longest wall time of a call (from the episodes'
journals; the longest is usually the first, which starts the judges), the sweep's wall time, the
evaluator's busy fraction (summed tool wall over sweep wall: how much of the time a tool
was running on the node) and, on cuda, the GPUs' utilization sampled by nvidia-smi every
200 ms during the sweep (mean, and the fraction of samples above 0).

Results: benchmarks/results/tools_sweep_<device>.{json,md}, with the exact command.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tests.agent.tool_server import ToolServer, Turn, step_of

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "tests" / "engine" / "fixtures"
SCRIPT = ("import os, torch, torch.distributed as dist\n"
          "x = torch.ones(1 << 20, device='cuda' if torch.cuda.is_available() else 'cpu')\n"
          "dist.all_reduce(x)\nprint('rank', os.environ['RANK'], 'ok', x[0].item())\n")
WRONG = "def solution(*args, **kwargs):\n    return args[0]\n"
CPU_FAST_TIMING = ["eval.trials=2", "eval.timing.warmup_ms=5", "eval.timing.min_calls=5", "eval.timing.max_calls=40",
                   "eval.timing.target_rel_ci=0.05", "eval.timing.max_timing_s=1"]
"""The engine tests' fast timing, for sweeps on a 2-core CPU machine."""


def problem_for(device: str) -> tuple[str, str, str]:
    """(problem id, problems source, the good module)."""
    if device == "cuda":
        from pkb_ray.problems import load_problem

        return "allreduce", "builtin", load_problem("builtin", "allreduce").expert_source
    return "sum_ranks", str(FIXTURES / "problems"), (FIXTURES / "candidates" / "store_exchange.py").read_text()


def script_for(good: str):
    def script(body: dict) -> Turn:
        step = step_of(body)
        if step == 1:
            return Turn("A first try.", [("check", {"source": WRONG})])
        if step == 2:
            return Turn("Fixed.", [("benchmark", {"source": good}), ("profile", {"source": good})])
        if step == 3:
            return Turn("", [("run", {"script": SCRIPT})])
        return Turn("Submitting.", [("submit", {"source": good})])

    return script


class GpuSampler:
    """nvidia-smi's utilization.gpu every 200 ms, in a child process, until stopped."""

    def __init__(self, out: Path) -> None:
        self.out = out
        self.proc = subprocess.Popen(
            ["nvidia-smi", "--query-gpu=timestamp,index,utilization.gpu", "--format=csv,noheader,nounits",
             "-lms", "200"], stdout=open(out, "w"), stderr=subprocess.DEVNULL)

    def stop(self) -> dict:
        self.proc.terminate()
        self.proc.wait()
        per_gpu: dict[str, list[float]] = {}
        for line in self.out.read_text().splitlines():
            parts = [p.strip() for p in line.split(",")]
            if len(parts) == 3 and parts[2].replace(".", "").isdigit():
                per_gpu.setdefault(parts[1], []).append(float(parts[2]))
        return {gpu: {"samples": len(v), "mean_util_pct": round(statistics.mean(v), 1),
                      "busy_fraction": round(sum(1 for x in v if x > 0) / len(v), 3)}
                for gpu, v in sorted(per_gpu.items()) if v}


def journal_records(sweep_dir: Path) -> list[dict]:
    out = []
    for path in sorted((sweep_dir / "agent").glob("*/*/*.jsonl")):
        out.extend(json.loads(x) for x in path.read_text().splitlines() if x.strip())
    return out


def tools_sweep_overrides(args: argparse.Namespace, problem: str, source: str, work: Path, name: str,
                          attempts: int, extra: list[str]) -> list[str]:
    """`sweep.py` overrides for `attempts` scripted tools-mode episodes of problem on args.device,
    args.world_size ranks (the scripted model is "toolbot", priced so that cost shows up), with
    the sweep's state under work; extra: the caller's own (limits, concurrency). Shared with
    scripts/device/tool_episode.py, so that its episode runs the sweep this benchmark times."""
    overrides = [
        "mode=tools", "model=openai_compatible", "model.model_id=toolbot", "model.max_retries=0",
        "model.price_input_per_mtok=1.0", "model.price_output_per_mtok=4.0", "mode.tools.tool_models=[openai_compatible]",
        *extra,
        f"problems.source={source}", f"problems.ids=[{problem}]", f"attempts={attempts}",
        f"eval.device={args.device}", f"eval.world_size={args.world_size}", f"eval.cache_dir={args.cache_dir}",
        f"generation.cache_dir={work / 'kernels_cache'}", f"sweep.root={work / 'sweeps'}", f"sweep.name={name}",
        "sweep.progress=false", "tracking.enabled=false",
    ]
    if args.device == "cpu":
        overrides += CPU_FAST_TIMING
    return overrides


def sweep_env() -> dict[str, str]:
    """The sweep child's environment: ours without RAY_ADDRESS (it starts its own local Ray)
    and MLFLOW_* (tracking is off), with the repo first on PYTHONPATH."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAY_ADDRESS", "MLFLOW_"))}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    return env


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    ap.add_argument("--episodes", type=int, default=8)
    ap.add_argument("--world-size", type=int, default=2)
    ap.add_argument("--cache-dir", default=os.path.expanduser("~/.cache/pkb_ray"))
    ap.add_argument("--out", default=str(REPO / "benchmarks" / "results"))
    args = ap.parse_args()
    problem, source, good = problem_for(args.device)
    work = Path(tempfile.mkdtemp(prefix="pkb_tools_bench_"))
    name = f"bench_tools_{args.device}"
    overrides = tools_sweep_overrides(args, problem, source, work, name, args.episodes,
                                      [f"model.max_concurrency={args.episodes}"])
    env = sweep_env()
    sampler = None
    with ToolServer(script_for(good)) as server:
        cmd = [sys.executable, str(REPO / "sweep.py"), f"model.api_base={server.url}", *overrides]
        if args.device == "cuda":
            sampler = GpuSampler(work / "gpu_util.csv")
        t0 = time.monotonic()
        proc = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True)
        sweep_s = time.monotonic() - t0
        gpu = sampler.stop() if sampler else {}
        requests = len(server.bodies)
    print(proc.stdout[-3000:], proc.stderr[-3000:], sep="\n")
    sweep_dir = work / "sweeps" / name
    cells = [json.loads(x) for x in (sweep_dir / "journal.jsonl").read_text().splitlines()] \
        if (sweep_dir / "journal.jsonl").exists() else []
    recs = journal_records(sweep_dir)
    done = [r for r in recs if r["kind"] == "tool_result"]
    tools: dict[str, dict] = {}
    for tool in ("check", "benchmark", "profile", "run", "submit"):
        walls = [r["wall_s"] for r in done if r["tool"] == tool]
        if not walls:
            continue
        tools[tool] = {"calls": len(walls), "max_wall_s": round(max(walls), 3),
                       "median_wall_s": round(statistics.median(walls), 3),
                       "median_device_s": round(statistics.median(r["device_s"] for r in done if r["tool"] == tool), 3)}
    busy = sum(r["wall_s"] for r in done)
    result = {
        "command": "python " + shlex.join(["-m", "scripts.bench_tools_sweep", *sys.argv[1:]]),
        "device": args.device, "problem": problem, "world_size": args.world_size, "episodes": args.episodes,
        "sweep_exit": proc.returncode, "sweep_wall_s": round(sweep_s, 1), "model_requests": requests,
        "cells": len(cells), "correct": sum(c["status"] == "correct" for c in cells),
        "tools": tools, "evaluator_busy_fraction": round(busy / sweep_s, 3) if sweep_s else None,
        "gpu_utilization": gpu, "load_average_1m": os.getloadavg()[0], "cpus": os.cpu_count(),
        "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    print(json.dumps(result, indent=1))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"tools_sweep_{args.device}.json").write_text(json.dumps(result, indent=1))
    lines = [f"# tools-mode sweep ({args.device})", "", f"Command: `{result['command']}`", "",
             f"{args.episodes} episodes of `{problem}` at world size {args.world_size}: {result['correct']}/"
             f"{result['cells']} cells correct, {requests} model requests, sweep {result['sweep_wall_s']} s "
             f"(exit {proc.returncode}); 1-minute load {result['load_average_1m']:.1f} on {result['cpus']} CPUs; "
             f"{result['at']}.", "",
             f"Evaluator busy fraction (summed tool wall / sweep wall): {result['evaluator_busy_fraction']}", "",
             "| tool | calls | median wall s | max wall s | median device-s |", "|---|---|---|---|---|"]
    for t, r in tools.items():
        lines.append(f"| {t} | {r['calls']} | {r['median_wall_s']} | {r['max_wall_s']} | {r['median_device_s']} |")
    if gpu:
        lines += ["", "| GPU | samples | mean utilization % | busy fraction |", "|---|---|---|---|"]
        lines += [f"| {g} | {v['samples']} | {v['mean_util_pct']} | {v['busy_fraction']} |" for g, v in gpu.items()]
    (out / f"tools_sweep_{args.device}.md").write_text("\n".join(lines) + "\n")
    return 0 if proc.returncode == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
