"""`run_sweep`: the one function that composes a sweep, in order.

config -> models and problems -> journal (resume) -> Ray -> device -> MLflow (reconcile)
-> evaluators and stages -> pipeline (record each cell as it lands) -> leaderboard.
"""

from __future__ import annotations

import logging
import os
import sys
import traceback
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from pkb_ray.config.schema import ModelConfig, RootConfig
from pkb_ray.config.validate import ConfigError, validate
from pkb_ray.driver.cells import finalize
from pkb_ray.driver.device import decide_device
from pkb_ray.driver.pipeline import CellState, Pipeline
from pkb_ray.driver.plan import pending_cells, plan_cells, without_missing_experts
from pkb_ray.driver.progress import SweepProgress
from pkb_ray.driver.stages import Budget, RayStages
from pkb_ray.tracking.journal import Journal
from pkb_ray.tracking.turn_log import TurnLog

log = logging.getLogger("pkb_ray")

EXIT_OK = 0
EXIT_BAD_INPUT = 2
EXIT_INCOMPLETE = 3
EXIT_INTERRUPTED = 130
EXIT_INTERNAL_ERROR = 1


def _say(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def resolve_sweep_models(cfg: RootConfig) -> list[ModelConfig]:
    if not cfg.models:
        return [cfg.model]
    from pkb_ray.generation.models import resolve_models

    return resolve_models(list(cfg.models))


def usable_models(models: list[ModelConfig]) -> list[ModelConfig]:
    """Models that can run: a broken config stops the sweep (nothing is spent yet); a
    missing API key skips that model, said once, naming the variable."""
    from pkb_ray.generation.models import check_model_config, missing_api_key

    bad = [f"model {m.name}: {why}" for m in models if (why := check_model_config(m))]
    if bad:
        _say("pkb: " + "\n  ".join(bad))
        return []
    usable = []
    for model in models:
        var = missing_api_key(model)
        if var:
            _say(f"pkb: skipping model {model.name}: its API key variable {var} is not set")
        else:
            usable.append(model)
    if not usable:
        _say("pkb: no model left to run (every model lacks its API key)")
    return usable


def init_ray(cfg: RootConfig) -> None:
    import ray

    if ray.is_initialized():
        return
    common = dict(include_dashboard=False, logging_level=logging.WARNING, log_to_driver=False)
    if cfg.cluster.address:
        ray.init(address=cfg.cluster.address, **common)
    else:
        # "local" always starts a new instance; with no address Ray would join any cluster
        # already running on this machine (another user's, or a test's).
        ray.init(address="local", num_cpus=cfg.cluster.num_cpus or max(4, os.cpu_count() or 1), **common)


def _full_key(exc: Exception) -> str:
    return str(getattr(exc, "full_key", "") or "KEY")


def _artifact_root(uri: str) -> Path | None:
    return Path("mlartifacts") if uri.startswith(("sqlite:", "file:")) or "://" not in uri else None


def run_sweep(dcfg: DictConfig) -> int:
    from omegaconf.errors import OmegaConfBaseException

    try:
        cfg: RootConfig = OmegaConf.to_object(dcfg)  # typed from here on
    except OmegaConfBaseException as exc:  # e.g. a template's `???` left unset
        _say(f"pkb: {exc}".splitlines()[0] + f" (set it on the command line: {_full_key(exc)}=...)")
        return EXIT_BAD_INPUT
    try:
        validate(cfg)
        if cfg.turns is not None:
            cfg.mode.turns = cfg.turns
        models = resolve_sweep_models(cfg)
    except (ConfigError, ValueError, KeyError) as exc:
        _say(f"pkb: {exc}")
        return EXIT_BAD_INPUT

    usable = usable_models(models)
    if not usable:
        return EXIT_BAD_INPUT

    from pkb_ray.problems import load_problems

    problem_set = load_problems(cfg.problems.source, list(cfg.problems.ids) or None)
    for err in problem_set.errors:
        _say(f"pkb: {err}")
    unknown = [e for e in problem_set.errors if e.field == "id"]
    if unknown or not problem_set.problems:
        _say("pkb: fix the problem selection above (problems.ids / problems.source)")
        return EXIT_BAD_INPUT

    sweep_dir = Path(cfg.sweep.root) / cfg.sweep.name
    journal = Journal(sweep_dir / "journal.jsonl", fresh=cfg.sweep.fresh)
    (sweep_dir / "config.yaml").write_text(OmegaConf.to_yaml(dcfg), encoding="utf-8")

    import ray

    try:
        init_ray(cfg)
    except ConnectionError as exc:
        _say(f"pkb: cannot reach the Ray cluster at cluster.address={cfg.cluster.address}: {exc}")
        return EXIT_BAD_INPUT
    try:
        decision = decide_device(cfg, [m.name for m in usable], ray.nodes())
    except ConfigError as exc:
        _say(f"pkb: {exc}")
        return EXIT_BAD_INPUT
    if decision.notice:
        _say(decision.notice)
    if decision.models:
        from pkb_ray.generation.models import load_model_config

        usable = [load_model_config(name) for name in decision.models]

    problem_ids = list(problem_set.problems)
    cells = plan_cells([m.name for m in usable], problem_ids, cfg.attempts, cfg.mode.name)
    has_expert = {pid: p.expert_source is not None for pid, p in problem_set.problems.items()}
    planned = len(cells)
    cells = without_missing_experts(cells, has_expert)
    if len(cells) < planned:
        _say(f"pkb: model expert: expert solutions exist for {sum(has_expert.values())} of "
             f"{len(has_expert)} problems; only those are evaluated")
    pending = pending_cells(cells, journal.done_ids())
    _say(
        f"pkb: sweep {cfg.sweep.name!r}: {len(cells)} cells ({len(usable)} models x "
        f"{len(problem_ids)} problems x {cfg.attempts} attempts), {len(cells) - len(pending)} "
        f"already recorded, {len(pending)} to run on {decision.device} "
        f"(world size {cfg.eval.world_size}, {decision.size} sizes); journal {journal.path}"
    )

    tracker = None
    if cfg.tracking.enabled:
        from pkb_ray.tracking.mlflow_tracker import MlflowTracker

        tracker = MlflowTracker(
            cfg.tracking.uri,
            cfg.sweep.name,
            _artifact_root(cfg.tracking.uri),
            {
                "models": ",".join(m.name for m in usable),
                "problems": str(len(problem_ids)),
                "attempts": str(cfg.attempts),
                "mode": cfg.mode.name,
                "device": decision.device,
                "world_size": str(cfg.eval.world_size),
                "size": decision.size,
                "cells_planned": str(len(cells)),
            },
        )
        relogged = tracker.reconcile(journal.records(), fresh=cfg.sweep.fresh)
        if relogged:
            _say(f"pkb: re-logged {relogged} journal cells missing from MLflow")

    # Spend counts what this sweep paid: a generation replayed from kernels_cache was paid
    # for once already (and its cost still shows in the leaderboard's per-cell cost).
    budget = Budget(
        cfg.budget_usd,
        sum(r.generation.cost_usd for r in journal.records() if not r.generation.cached),
    )
    status = "FINISHED"
    progress = SweepProgress(len(pending), enabled=cfg.sweep.progress)
    deferred: list[str] = []
    turn_log = (
        TurnLog(sweep_dir / "turns.jsonl", fresh=cfg.sweep.fresh) if cfg.mode.name == "agent" else None
    )
    try:
        from pkb_ray.engine.node_evaluator import start_node_evaluators

        def start_evaluators() -> list:
            return start_node_evaluators(
                decision.device, cfg.eval.world_size, decision.placement, cfg.cluster.cpu_evaluators
            )

        evaluators = start_evaluators() if pending else []
        stages = RayStages(
            cfg, {m.name: m for m in usable}, decision.device, decision.size, budget, turn_log
        )

        def record(state: CellState) -> None:
            result = finalize(state)
            if journal.append(result):
                budget.spent_usd += sum(
                    t.generation.cost_usd for t in state.turns if not t.generation.cached
                )
                if tracker:
                    tracker.log_cell(result)
            progress.update(result.status.value, result.generation.cost_usd)

        def defer(state: CellState, reason: str) -> None:
            deferred.append(f"{state.key.cell_id}: {reason}")
            progress.update("deferred")

        with progress:
            Pipeline(
                pending,
                stages,
                evaluators,
                record=record,
                defer=defer,
                max_inflight_generations=cfg.cluster.max_inflight_generations,
                max_queued_builds=cfg.cluster.max_queued_builds,
                replace_evaluators=start_evaluators,
            ).run()
    except KeyboardInterrupt:
        status = "KILLED"
        _say("pkb: interrupted; every recorded cell is in the journal. Re-run the same command to continue.")
    except Exception:  # a harness bug: keep what is recorded, say so, report, exit non-zero
        status = "FAILED"
        _say("pkb: the sweep stopped on an internal error; every recorded cell is in the journal:")
        traceback.print_exc()
    finally:
        if tracker:
            tracker.flush()

    finish_report(cfg, journal, tracker, status, progress.summary())
    journal.close()
    if turn_log:
        turn_log.close()
    if status == "KILLED":
        return EXIT_INTERRUPTED
    if status == "FAILED":
        return EXIT_INTERNAL_ERROR
    if budget.exhausted():
        _say(f"pkb: the sweep's spend ${budget.spent_usd:.2f} reached budget_usd={budget.limit_usd}: "
             "no new API calls were made after that; raise budget_usd and re-run to continue")
    if deferred:
        _say(f"pkb: {len(deferred)} cells deferred (not recorded; a re-run retries them):")
        for line in deferred[:20]:
            _say(f"  {line}")
        return EXIT_INCOMPLETE
    return EXIT_OK


def finish_report(cfg: RootConfig, journal: Journal, tracker, status: str, progress_line: str) -> None:
    """The leaderboard of every recorded cell of the sweep: printed, written, and logged to
    the sweep's parent run, which is then closed with `status`."""
    from pkb_ray.report.leaderboard import build_report, print_leaderboard
    from pkb_ray.report.metrics import summary_metrics

    sweep_dir = journal.path.parent
    records = journal.records()
    report = build_report(records, sweep_dir)
    if records:
        print_leaderboard(report.summaries, f"sweep {cfg.sweep.name}: {len(records)} cells recorded")
    _say(f"pkb: {progress_line}; leaderboard {report.markdown_path} and {report.csv_path}")
    if tracker:
        files = [p for p in (report.markdown_path, report.csv_path, report.plot_path,
                             report.turn_plot_path) if p]
        tracker.log_summary(summary_metrics(report.summaries), files, report.curves)
        for err in tracker.close(status):
            _say(f"pkb: {err}")
        _say(f"pkb: MLflow: mlflow ui --backend-store-uri {cfg.tracking.uri}  (experiment {cfg.sweep.name!r})")
