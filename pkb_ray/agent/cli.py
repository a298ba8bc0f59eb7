"""`pkb agent run PROBLEM [sweep overrides] [agent.KEY=VALUE ...]`: one tool-agent episode.

    pkb agent run sum_ranks model=openai_compatible model.api_base=http://127.0.0.1:8000/v1 \\
        model.model_id=qwen3 problems.source=DIR eval.device=cpu agent.tool_models=[openai_compatible]

Sweep overrides compose exactly as `python sweep.py` does (the same conf/ tree and checks),
so the submission is evaluated with the request a zero-shot cell of that sweep gets. The
episode's journal is `<sweep.root>/<sweep.name>/agent/<model>/<problem>/<attempt>.jsonl`
(`sweeps/agent_runs/...` without sweep.name); re-running the same command resumes it.
Prints the result as JSON on the last line. Exit codes: 0 submitted and correct, 1 ended
otherwise, 2 bad settings or a model that cannot call tools, 3 a model call failed (a re-run
retries it).
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pkb_ray.config.schema import ModelConfig, RootConfig
    from pkb_ray.engine.request import EvalRequest

AGENT_RUNS = "agent_runs"
"""Where `pkb agent run` keeps its episodes without sweep.name (they are no sweep's cells)."""


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("agent", help="the tool-using agent (check, benchmark, profile, run, submit)",
                              description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="agent_command", required=True, metavar="SUBCOMMAND")
    run = sub.add_parser("run", help="run (or resume) one episode")
    run.add_argument("problem", help="problem id")
    run.add_argument("overrides", nargs="*", help="sweep overrides (model=..., eval.device=...) and agent.KEY=VALUE")
    run.add_argument("--attempt", type=int, default=1)
    run.set_defaults(handler=_run)


def split_overrides(items: list[str]) -> tuple[list[str], list[str]]:
    """(sweep overrides, agent overrides without their `agent.` prefix)."""
    sweep, agent = [], []
    for o in items:
        (agent.append(o[len("agent."):]) if o.startswith("agent.") else sweep.append(o))
    return sweep, agent


def episode_spec(problem: str, sweep_overrides: list[str], attempt: int):
    from pkb_ray.agent.episode import EpisodeSpec
    from pkb_ray.config.overrides import check_overrides
    from pkb_ray.config.store import compose_config
    from pkb_ray.config.validate import ConfigError
    from pkb_ray.generation.models import as_model_config
    from omegaconf import OmegaConf

    bad = check_overrides(sweep_overrides)
    if bad:
        raise ConfigError(bad)
    cfg = OmegaConf.to_object(compose_config(sweep_overrides))
    model = as_model_config(cfg.model)
    base = eval_request(cfg, problem, model)
    path = Path(cfg.sweep.root) / (cfg.sweep.name or AGENT_RUNS) / "agent" / model.name / problem / f"{attempt}.jsonl"
    return EpisodeSpec(model=model, attempt=attempt, base=base, journal_path=str(path),
                       kernels_cache=str(Path(cfg.generation.cache_dir).resolve()))


def eval_request(cfg: RootConfig, problem: str, model: ModelConfig) -> EvalRequest:
    """The request a zero-shot cell of the same sweep gets: device and size resolved by the
    sweep's own rule (generation/device.py, this machine standing in for the cluster's one
    node), the guard from the model's candidate source, the rest from `eval` (as
    modes/stages.py builds it)."""
    from pkb_ray.config.validate import ConfigError
    from pkb_ray.generation.device import decide_device
    from pkb_ray.engine.request import EvalRequest
    from pkb_ray.generation.sources import source_for

    decision = decide_device(cfg, [model], _this_machine() if cfg.eval.device != "cpu" else [])
    if decision.models is not None:  # the sweep's CPU self-check: no episode for this model
        raise ConfigError(decision.notice.splitlines()[0] + f" Model {model.name} writes CUDA candidates; "
                          "set eval.device=cpu to evaluate on CPU anyway.")
    return EvalRequest.from_config(cfg.eval, problem_id=problem, problems_source=cfg.problems.source,
                                   candidate_source="", device=decision.device, size=decision.size,
                                   guard=source_for(model).guard, cell_id=f"{model.name}/{problem}/tools")


def _this_machine() -> list[dict]:
    """This machine as the one node of a Ray cluster (what decide_device reads), without
    starting Ray: the episode evaluates here."""
    import torch  # only asks whether GPUs exist: no CUDA context is made

    return [{"Alive": True, "Resources": {"GPU": torch.cuda.device_count()}}]


def _run(args: argparse.Namespace) -> int:
    from pkb_ray.agent.capability import ToolsUnsupported
    from pkb_ray.agent.config import AgentConfigError, agent_config
    from pkb_ray.agent.episode import EndReason, run_episode
    from pkb_ray.agent.journal import JournalError
    from pkb_ray.config.validate import ConfigError
    from pkb_ray.records import to_plain

    sweep, agent = split_overrides(args.overrides)
    try:
        cfg = agent_config(agent)
        spec = episode_spec(args.problem, sweep, args.attempt)
        result = asyncio.run(run_episode(spec, cfg))
    except (ToolsUnsupported, AgentConfigError, ConfigError, JournalError) as e:
        print(f"pkb agent: {e}", file=sys.stderr)
        return 2
    finally:
        from pkb_ray.engine.node.evaluation import shutdown

        shutdown()
    final = result.final
    print(f"pkb agent: {result.detail}", file=sys.stderr)
    print(json.dumps({"reason": result.reason.value, "detail": result.detail, "steps": result.steps,
                      "usage": dataclasses.asdict(result.usage), "requests_made": result.requests_made,
                      "tools_run": result.tools_run, "journal": spec.journal_path,
                      "final": {k: v for k, v in to_plain(final).items() if k not in ("log", "build_log")}
                      if final else None}, sort_keys=True))
    if result.reason is EndReason.MODEL_ERROR:
        return 3
    return 0 if final is not None and final.correct else 1
