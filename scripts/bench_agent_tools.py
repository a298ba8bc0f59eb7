"""Benchmark the tool agent's tools: the wall time and device-seconds of each tool call.

    python scripts/bench_agent_tools.py --device cpu              # fixture sum_ranks, store exchange
    python scripts/bench_agent_tools.py --device cuda --repeats 5 # allreduce expert, 2 GPUs

Each tool is called --repeats times on a correct candidate through the same ToolExecutor an
episode uses (check, benchmark and submit through engine.evaluate; profile and run through
the sandboxed rank runner). The first call of a tool is reported apart ("cold": judges,
hardware profile, prebuild); the median is over the rest. Issue 17 asks for a warm `check`
of at most 5 s on 2 x H200.

Results: benchmarks/results/agent_tools_<device>.{json,md}, with the exact command.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import statistics
import sys
import time
from pathlib import Path

from pkb_ray.agent import AgentConfig, Tool, ToolExecutor, ToolRequest
from pkb_ray.config.schema import EvalConfig, TimeoutConfig, TimingConfig
from pkb_ray.engine.request import EvalRequest

REPO = Path(__file__).resolve().parents[1]

SCRIPT = ("import torch, torch.distributed as dist\n"
          "x = torch.ones(1 << 20, device='cuda' if torch.cuda.is_available() else 'cpu')\n"
          "dist.all_reduce(x)\nprint('ok', x[0].item())\n")


def setup(device: str, cache_dir: str) -> tuple[EvalRequest, str]:
    if device == "cuda":
        from pkb_ray.problems import load_problem

        src = load_problem("builtin", "allreduce").expert_source
        return EvalRequest(problem_id="allreduce", problems_source="builtin", candidate_source="", device="cuda",
                           size="bench", cell_id="bench/allreduce/tools",
                           eval=EvalConfig(world_size=2, cache_dir=cache_dir)), src
    fixtures = REPO / "tests" / "engine" / "fixtures"
    fast = TimingConfig(warmup_ms=5.0, min_calls=5, max_calls=40, target_rel_ci=0.05, max_timing_s=1.0)
    return EvalRequest(problem_id="sum_ranks", problems_source=str(fixtures / "problems"), candidate_source="",
                       device="cpu", size="small", cell_id="bench/sum_ranks/tools",
                       eval=EvalConfig(world_size=2, trials=2, timing=fast, timeouts=TimeoutConfig(trial_s=6.0),
                                       cache_dir=cache_dir)), (fixtures / "candidates" / "store_exchange.py").read_text()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    ap.add_argument("--repeats", type=int, default=4)
    ap.add_argument("--cache-dir", default="~/.cache/pkb_ray")
    ap.add_argument("--out", default=str(REPO / "benchmarks" / "results"))
    args = ap.parse_args()
    base, source = setup(args.device, args.cache_dir)
    ex = ToolExecutor(base, AgentConfig())
    rows = {}
    for tool in (Tool.CHECK, Tool.BENCHMARK, Tool.PROFILE, Tool.RUN, Tool.SUBMIT):
        text = SCRIPT if tool is Tool.RUN else source
        walls, devs, oks = [], [], []
        for _ in range(args.repeats):
            out = ex.execute(ToolRequest(tool, text))
            walls.append(out.wall_s)
            devs.append(out.device_s)
            res = out.result
            oks.append(bool(getattr(res, "correct", getattr(res, "ok", False))))
        warm = walls[1:] or walls
        rows[tool.value] = {"cold_wall_s": round(walls[0], 3), "median_warm_wall_s": round(statistics.median(warm), 3),
                            "median_warm_device_s": round(statistics.median(devs[1:] or devs), 3), "all_ok": all(oks),
                            "walls_s": [round(w, 3) for w in walls]}
        print(tool.value, rows[tool.value], flush=True)
    from pkb_ray.engine.node.evaluation import shutdown

    shutdown()
    import torch

    meta = {"command": "python " + shlex.join(["scripts/bench_agent_tools.py"] + sys.argv[1:]),
            "device": args.device, "problem": base.problem_id, "world_size": base.eval.world_size,
            "repeats": args.repeats, "torch": torch.__version__, "python": platform.python_version(),
            "load_average_1m": os.getloadavg()[0], "cpus": os.cpu_count(),
            "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / f"agent_tools_{args.device}.json").write_text(json.dumps({"meta": meta, "tools": rows}, indent=1))
    lines = [f"# agent tools ({args.device})", "", f"Command: `{meta['command']}`", "",
             f"Problem `{base.problem_id}`, world size {base.eval.world_size}, {args.repeats} calls per tool, "
             f"torch {meta['torch']}, {meta['at']}; 1-minute load average {meta['load_average_1m']:.1f} "
             f"on {meta['cpus']} CPUs.", "",
             "| tool | cold wall s | median warm wall s | median warm device-s | all ok |", "|---|---|---|---|---|"]
    for name, r in rows.items():
        lines.append(f"| {name} | {r['cold_wall_s']} | {r['median_warm_wall_s']} | {r['median_warm_device_s']} | {r['all_ok']} |")
    (out_dir / f"agent_tools_{args.device}.md").write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
