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
from pkb_ray.driver.identity import refusal, settings_changes, sweep_settings
from pkb_ray.driver.invocations import append_invocation
from pkb_ray.driver.plan import SweepPlan, build_plan, device_refusals
from pkb_ray.driver.progress import InFlight, SweepProgress
from pkb_ray.driver.stages import Budget, RayStages, prompt_context
from pkb_ray.store.journal import Journal, current_records, read_journal
from pkb_ray.store.turn_log import TurnLog

log = logging.getLogger("pkb_ray")

EXIT_OK = 0
EXIT_BAD_INPUT = 2
EXIT_INCOMPLETE = 3
EXIT_INTERRUPTED = 130
EXIT_INTERNAL_ERROR = 1


def _say(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def model_names(cfg: RootConfig) -> list[str]:
    """`models=all` (a string on the command line) or `models=[a,b]`, as a list of names."""
    names = [cfg.models] if isinstance(cfg.models, str) else list(cfg.models or [])
    bad = [n for n in names if not isinstance(n, str) or not n]
    if bad:
        raise ConfigError(f"models={cfg.models!r}: give model names, e.g. models=all or models=[opus47,gpt55]")
    return names


def resolve_sweep_models(cfg: RootConfig) -> list[ModelConfig]:
    names = model_names(cfg)
    if not names:
        return [cfg.model]
    from pkb_ray.generation.models import resolve_models

    return resolve_models(names)


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
        # Ray 2.60 turns token authentication on for a new local cluster (the token lives in
        # ~/.ray/auth_token) and warns that it did, on every run. Keep the protection, drop
        # the warning. (Setting RAY_AUTH_MODE here is too late: Ray read it at import.)
        logging.getLogger("ray._private.authentication.authentication_token_setup").setLevel(logging.ERROR)
        # "local" always starts a new instance; with no address Ray would join any cluster
        # already running on this machine (another user's, or a test's).
        ray.init(address="local", num_cpus=cfg.cluster.num_cpus or max(4, os.cpu_count() or 1), **common)


def _full_key(exc: Exception) -> str:
    return str(getattr(exc, "full_key", "") or "KEY")


def _artifact_root(uri: str) -> Path | None:
    return Path("mlartifacts") if uri.startswith(("sqlite:", "file:")) or "://" not in uri else None


def run_sweep(dcfg: DictConfig) -> int:
    """The sweep, in order: checks (nothing written before they pass), plan against the
    journal, then run; returns the exit status."""
    from omegaconf.errors import OmegaConfBaseException

    from pkb_ray.config.overrides import unknown_composed_keys

    unknown = unknown_composed_keys(dcfg)
    if unknown:
        from pkb_ray.config.overrides import unknown_key_message

        _say(f"pkb: {unknown_key_message(unknown[0])}")
        return EXIT_BAD_INPUT
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
    unknown_ids = [e for e in problem_set.errors if e.field == "id"]
    if unknown_ids or not problem_set.problems:
        _say("pkb: fix the problem selection above (problems.ids / problems.source)")
        return EXIT_BAD_INPUT

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
    refused = device_refusals(usable, decision.device)
    if refused:
        _say("pkb: " + "\n  ".join(refused) + "\nNothing ran. Evaluate on GPUs (eval.device=cuda on a "
             "GPU node or cluster), or check the pipeline on CPU with model=reference.")
        return EXIT_BAD_INPUT

    from pkb_ray.engine.version import HARNESS_VERSION

    settings = sweep_settings(cfg, decision.device, decision.size, HARNESS_VERSION)
    context = prompt_context(cfg, decision.device, decision.size)
    from pkb_ray.generation.models import is_pseudo

    if any(not is_pseudo(m) for m in usable):  # prompts are built: describe inputs once, here
        context = context.with_inputs(problem_set.problems)
    plan = build_plan(cfg, usable, problem_set.problems, settings, context)
    sweep_dir = Path(cfg.sweep.root) / cfg.sweep.name
    journal_path = sweep_dir / "journal.jsonl"
    recorded = read_journal(journal_path) if journal_path.exists() and not cfg.sweep.fresh else []
    changes = settings_changes(recorded, settings)
    if changes:
        _say("pkb: " + refusal(cfg.sweep.name, changes, len(recorded)))
        return EXIT_BAD_INPUT

    # Every check passed: from here on the sweep's directory changes.
    journal = Journal(journal_path, fresh=cfg.sweep.fresh)
    append_invocation(sweep_dir / "config.yaml", OmegaConf.to_container(dcfg), settings)
    for note in plan.notes:
        _say(f"pkb: {note}")
    pending = plan.pending(journal.done_ids())
    _say(
        f"pkb: sweep {cfg.sweep.name!r}: {plan.size_text()}; {len(plan.cells) - len(pending)} "
        f"already recorded, {len(pending)} to run on {decision.device} "
        f"(world size {cfg.eval.world_size}, {decision.size} sizes, {cfg.eval.trials} trials, "
        f"harness {HARNESS_VERSION}); journal {journal.path}"
    )
    return _run(cfg, decision, usable, problem_set.problems, plan, pending, journal, sweep_dir, context)


def _run(cfg: RootConfig, decision, usable: list[ModelConfig], problems: dict, plan: SweepPlan,
         pending: list[CellState], journal: Journal, sweep_dir: Path, context) -> int:
    """Run the pending cells through the pipeline, recording each as it lands."""
    planned_ids = plan.planned_ids()
    tracker = None
    if cfg.tracking.enabled:
        from pkb_ray.tracking.mlflow_tracker import MlflowTracker

        tracker = MlflowTracker(
            cfg.tracking.uri,
            cfg.sweep.name,
            _artifact_root(cfg.tracking.uri),
            {
                **{k.replace("eval.", "").replace(".", "_"): v for k, v in plan.sweep_settings.items()
                   if k.count(".") <= 1},
                "models": ",".join(m.name for m in usable),
                "problems": str(len(problems)),
                "attempts": str(cfg.attempts),
                "mode": cfg.mode.name,
                "cells_planned": str(len(plan.cells)),
            },
        )
        relogged = tracker.reconcile(current_records(journal.records(), planned_ids),
                                     fresh=cfg.sweep.fresh)
        if relogged:
            _say(f"pkb: re-logged {relogged} journal cells missing from MLflow")

    # Spend counts what this sweep paid: a generation replayed from kernels_cache was paid
    # for once already (and its cost still shows in the leaderboard's per-cell cost).
    budget = Budget(
        cfg.budget_usd,
        sum(r.generation.cost_usd for r in journal.records() if not r.generation.cached),
    )
    status = "FINISHED"
    per_model = {m.name: sum(1 for c in pending if c.key.model == m.name) for m in usable}
    progress = SweepProgress(per_model, enabled=cfg.sweep.progress)
    deferred: list[str] = []
    turn_log = (
        TurnLog(sweep_dir / "turns.jsonl", fresh=cfg.sweep.fresh) if cfg.mode.name == "agent" else None
    )
    categories = {pid: p.spec.category for pid, p in problems.items()}
    from pkb_ray.engine.version import HARNESS_VERSION

    try:
        from pkb_ray.engine.node_evaluator import start_node_evaluators

        labels: dict[int, str] = {}

        def start_evaluators() -> list:
            actors = start_node_evaluators(
                decision.device, cfg.eval.world_size, decision.placement, cfg.cluster.cpu_evaluators
            )
            labels.update(evaluator_labels(actors))
            return actors

        evaluators = start_evaluators() if pending else []
        stages = RayStages(
            cfg, {m.name: m for m in usable}, decision.device, decision.size, budget, turn_log,
            context,
        )

        def record(state: CellState) -> None:
            result = finalize(state, categories.get(state.key.problem, ""))
            node_version = result.evaluation.harness_version if result.evaluation else ""
            if node_version and node_version != HARNESS_VERSION:
                # Recorded under this driver's identity it would claim a harness it was not
                # measured by: keep it out, and say how to fix the cluster.
                defer(state, f"harness_error: the evaluating node runs harness {node_version}, "
                             f"this driver {HARNESS_VERSION}: install one checkout on every node")
                return
            if journal.append(result):
                budget.spent_usd += sum(
                    t.generation.cost_usd for t in state.turns if not t.generation.cached
                )
                if tracker:
                    tracker.log_cell(result)
            progress.update(state.key.model, result.status.value, result.generation.cost_usd)

        def defer(state: CellState, reason: str) -> None:
            deferred.append(f"{state.key.cell_id}: {reason}")
            progress.update(state.key.model, "deferred")

        pipeline: Pipeline | None = None

        def tick() -> None:
            if pipeline is None:
                return
            generating, building, queued = pipeline.counts()
            nodes: dict[str, int] = {}
            for ev in pipeline.evaluating():
                label = labels.get(id(ev), "evaluator")
                nodes[label] = nodes.get(label, 0) + 1
            progress.set_in_flight(InFlight(generating, building, queued, nodes))

        with progress:
            pipeline = Pipeline(
                pending,
                stages,
                evaluators,
                record=record,
                defer=defer,
                max_inflight_generations=cfg.cluster.max_inflight_generations,
                max_queued_builds=cfg.cluster.max_queued_builds,
                replace_evaluators=start_evaluators,
                tick=tick,
            )
            pipeline.run()
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

    finish_report(cfg, journal, tracker, status, progress.summary(), planned_ids)
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


def evaluator_labels(actors: list) -> dict[int, str]:
    """id(actor handle) -> a short name of its node (address, and GPUs it holds), for the
    progress display; an actor that does not answer in 30 s is just `evaluator N`."""
    import ray

    labels = {}
    for i, actor in enumerate(actors):
        try:
            info = ray.get(actor.info.remote(), timeout=30)
            node = info.get("node_id", "")[:8] or f"evaluator {i}"
            gpus = info.get("cuda_visible_devices")
            labels[id(actor)] = f"node {node}" + (f" (GPUs {gpus})" if gpus else f" #{i}")
        except Exception:  # noqa: BLE001: a label is not worth failing a sweep
            labels[id(actor)] = f"evaluator {i}"
    return labels


def finish_report(cfg: RootConfig, journal: Journal, tracker, status: str, progress_line: str,
                  planned_ids: dict[str, str] | None = None) -> None:
    """The leaderboard of the sweep's current cells (for this invocation's cells, the records
    made under its settings): printed, written beside the journal, and logged to the
    sweep's parent run, which is then closed with `status`."""
    from pkb_ray.report.leaderboard import build_report, print_leaderboard
    from pkb_ray.report.metrics import summary_metrics
    from pkb_ray.report.tables import cell_table

    sweep_dir = journal.path.parent
    records = current_records(journal.records(), planned_ids)
    title = f"sweep {cfg.sweep.name}: {len(records)} cells recorded"
    report = build_report(records, sweep_dir, title)
    if records:
        print_leaderboard(report, title)
    _say(f"pkb: {progress_line}; leaderboard {report.markdown_path} (per problem: "
         f"{report.problems_csv_path.name}, heatmap: {report.heatmap_path.name if report.heatmap_path else '-'})")
    if tracker:
        tracker.log_summary(summary_metrics(report.summaries), report.files(), report.curves,
                            cell_table(records), sorted(report.facts.hardware) if report.facts else [])
        for err in tracker.close(status):
            _say(f"pkb: {err}")
        _say(f"pkb: MLflow: pkb ui --uri {cfg.tracking.uri}  (experiment {cfg.sweep.name!r}; "
             f"or LITELLM_LOCAL_MODEL_COST_MAP=True mlflow ui --backend-store-uri {cfg.tracking.uri})")
