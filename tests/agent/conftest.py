"""The scripted episode the agent tests share: sum_ranks (an all-reduce fixture) on 2 gloo
ranks, a model on a real local server that calls tools."""

from __future__ import annotations

import sys
from pathlib import Path

from tests.agent.tool_server import Turn, step_of, tool_results

REPO = Path(__file__).resolve().parents[2]
PROBLEMS = REPO / "tests" / "engine" / "fixtures" / "problems"
GOOD = (REPO / "tests" / "engine" / "fixtures" / "candidates" / "store_exchange.py").read_text()
# Right on rank 0, off by one on rank 1: check names rank 1, trial 0.
BAD = GOOD.replace("    return out\n", "    return out + 1.0 if rank == 1 else out\n")
SCRIPT = ("import os, torch, torch.distributed as dist\n"
          "x = torch.full((4,), float(dist.get_rank() + 1))\n"
          "dist.all_reduce(x)\n"
          "print('rank', os.environ['RANK'], 'sum', x[0].item())\n")
SECRET = "sk-agent-test-secret-0123456789"


def scripted(body: dict) -> Turn:
    """check(bad) -> [benchmark(good), profile(good)] -> run(script) -> submit(good)."""
    step = step_of(body)
    if step == 1:
        return Turn("Let me check a first version.", [("check", {"source": BAD})])
    if step == 2:
        (check,) = tool_results(body)
        assert check["failure"] == "incorrect" and check["failing_rank"] == 1, check
        return Turn("Rank 1 is off; fixed.", [("benchmark", {"source": GOOD}), ("profile", {"source": GOOD})])
    if step == 3:
        return Turn("", [("run", {"script": SCRIPT})])
    return Turn("Submitting.", [("submit", {"source": GOOD})])


def overrides(server_url: str, tmp: Path) -> list[str]:
    """A sweep command line for the episode: fast timing (the engine tests' budgets)."""
    return [
        "model=openai_compatible", f"model.api_base={server_url}", "model.model_id=toolbot",
        "model.price_input_per_mtok=1.0", "model.price_output_per_mtok=4.0", "model.max_retries=0",
        f"problems.source={PROBLEMS}", "eval.device=cpu", "eval.world_size=2", "eval.trials=2",
        f"eval.cache_dir={tmp / 'cache'}", "eval.timing.warmup_ms=5", "eval.timing.min_calls=5",
        "eval.timing.max_calls=40", "eval.timing.target_rel_ci=0.05", "eval.timing.max_timing_s=1",
        f"generation.cache_dir={tmp / 'kernels_cache'}", f"sweep.root={tmp / 'sweeps'}", "sweep.name=tools",
        "agent.tool_models=[openai_compatible]", "agent.run_timeout_s=60",
    ]


def agent_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "pkb_ray.cli", "agent", "run", "sum_ranks", *args]
