"""`Sweep`: one invocation of a sweep, in four steps the caller runs in order.

    sweep = Sweep(cfg)
    plan = sweep.plan()                          # checks, then the frozen plan; writes nothing
                                                 # (raises Refused, its reason said)
    with sweep.open_sinks(plan):                 # journal, turn log, trackers (reconciled)
        sweep.run(plan)                          # the pipeline: record each cell as it lands
        return sweep.finish()                    # leaderboard, trackers closed, exit status

`--dry-run` stops after the plan and prints it (SweepPlan.describe).

The journal and turn log (pkb_ray/store) are the source of truth and are written first; the
trackers (pkb_ray/tracking) mirror the journal. Every user message and exit status of a
sweep is said here or in driver/checks.py.
"""

from __future__ import annotations

import contextlib
import os
import time
import traceback
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

from omegaconf import DictConfig, OmegaConf

from pkb_ray.config.schema import ModelConfig, RootConfig
from pkb_ray.driver.budget import Budget
from pkb_ray.driver.checks import (
    EXIT_INCOMPLETE,
    EXIT_INTERNAL_ERROR,
    EXIT_INTERRUPTED,
    EXIT_OK,
    Refused,
    refuse,
    say,
    sweep_models,
    typed_config,
)
from pkb_ray.driver.hardware_probe import SweepProfile
from pkb_ray.driver.pipeline import Pipeline
from pkb_ray.driver.plan import SweepPlan
from pkb_ray.driver.progress import STARTUP_S, InFlight, SweepProgress
from pkb_ray.engine import HARNESS_VERSION
from pkb_ray.generation.device import DeviceDecision
from pkb_ray.modes import CellState, Mode, StageSettings, mode_of, prompt_context
from pkb_ray.records import CellResult, RecordError
from pkb_ray.store import Journal, TurnLog, current_records, read_journal
from pkb_ray.store.harness_tries import HarnessTries
from pkb_ray.tracking import SweepConflict, SweepSummary, Tracker, trackers_for

if TYPE_CHECKING:
    from pkb_ray.problems import Problem

# MLflow logs its database set-up at INFO ("Creating initial MLflow database tables...") on
# every new store: library chatter in a newcomer's first output. Warnings still show.
os.environ.setdefault("MLFLOW_LOGGING_LEVEL", "WARNING")


class Sweep:
    def __init__(self, dcfg: DictConfig) -> None:
        self.dcfg = dcfg
        self.cfg: RootConfig
        self.mode: Mode
        """The sweep's mode (modes/): its checks, stages, turn log and finalisation."""
        self.models: list[ModelConfig] = []
        self.problems: dict[str, Any] = {}
        self.categories: dict[str, str] = {}
        self.decision: DeviceDecision
        self.context: Any = None
        self.sweep_plan: SweepPlan
        """This invocation's plan (Sweep.plan's), once its sinks are open."""
        self.sweep_dir: Path
        self.journal: Journal | None = None
        self.turn_log: TurnLog | None = None
        self.trackers: list[Tracker] = []
        self.budget = Budget(None)
        self.progress: SweepProgress | None = None
        self.deferred: list[str] = []
        self.status = "FINISHED"
        self._pipeline: Pipeline | None = None
        self._actors: list = []
        """Every node actor started, closed at the end (their sandboxes and run roots go)."""
        self._probed: list = []
        """The node actors the plan started to ask for the hardware profile; the run's first."""
        self.evaluator_class: Any = None
        """The node actor class (None: the engine's NodeEvaluator); scripts/bench_cluster.py
        sets one that simulates evaluations, and says so."""
        self.profile: SweepProfile | None = None
        self.fallback = ""
        """`asked -> ran: why` when the device decision replaced the models (else "")."""
        self.problem_note = ""
        self._load_errors: list = []
        """What failed to load of the problems (said once, when loaded)."""
        self.left_out = ""
        self.auto_named = False
        """sweep.name was unset: the sweep is named from its settings (identity.default_sweep_name)."""
        self.missing_keys = 0
        """A dry run: models planned without their API key set here."""
        self.nodes: Any = None
        """A dry run: the GPU nodes it plans for (estimate.PlannedNodes)."""

    # -- 1. plan ---------------------------------------------------------------------
    def plan(self, dry_run: bool = False) -> SweepPlan:
        """Check everything and plan the cells against the journal. Writes nothing. Raises
        Refused (its reason said) when a check fails, or with EXIT_OK when the sweep is
        done already. `dry_run`: plan without asking anything beyond this machine: no Ray
        (the nodes are cluster.node_type x cluster.nodes, driver/estimate.py), no hardware
        probe, and models without their API key planned too (and counted).

        In three phases: the problems (loaded once), the device (and the models that run
        there), the cells. Where the prompts describe measured hardware, the third starts
        the sweep's evaluators to ask them, and the run keeps them."""
        from pkb_ray.generation.models import missing_api_key

        cfg = self.cfg = typed_config(self.dcfg)
        self.mode = mode_of(cfg.mode.name)
        self.auto_named = cfg.sweep.name is None
        if not cfg.sweep.fresh and self._nothing_to_run():
            raise Refused(EXIT_OK)
        asked = sweep_models(cfg, require_keys=not dry_run)
        self.missing_keys = sum(1 for m in asked if missing_api_key(m)) if dry_run else 0
        loaded = self._load_problems()
        self.models = self._decide_device(asked, dry_run)
        self._select_problems(loaded)
        self._check_models()
        try:
            return self._plan_cells(dry_run)
        except BaseException:  # refused after the probe started evaluators: they go now
            self._close_evaluators()
            raise

    def _load_problems(self) -> dict[str, Problem]:
        """Phase 1: the problems `problems.ids` names, or every problem (`problems.cpu_ids`
        picks among them once the device is known), loaded once; refused here, before Ray
        starts, when an id is unknown or none runs at the world size."""
        from pkb_ray.driver.plan import at_world_size
        from pkb_ray.problems import load_problems

        cfg = self.cfg
        problem_set = load_problems(cfg.problems.source, list(cfg.problems.ids) or None)
        self._load_errors = problem_set.errors
        for err in problem_set.errors:
            say(f"pkb: {err}")
        if any(e.field == "id" for e in problem_set.errors) or not problem_set.problems:
            raise refuse("pkb: fix the problem selection above (problems.ids / problems.source)")
        kept, left_out = at_world_size(problem_set.problems, cfg.eval.world_size)
        if not kept:
            self._no_problem_at_world_size(left_out)
        return problem_set.problems

    def _no_problem_at_world_size(self, left_out: str | None) -> None:
        if left_out:
            say(f"pkb: {left_out}")
        raise refuse(f"pkb: no selected problem runs at eval.world_size={self.cfg.eval.world_size}")

    def _decide_device(self, asked: list[ModelConfig], dry_run: bool) -> list[ModelConfig]:
        """Phase 2: where the cells are evaluated (device, size, GPU groups), and the models
        that run there: the asked ones, or the CPU self-check's where no GPU node can hold
        the sweep (`fallback`, said)."""
        from pkb_ray.config.validate import ConfigError
        from pkb_ray.driver.estimate import planned_nodes
        from pkb_ray.generation.device import decide_device, needs_gpus, runs_on_cpu_without_api
        from pkb_ray.generation.models import load_model_config

        cfg = self.cfg
        if dry_run:
            self.nodes = planned_nodes(cfg, cpu_here=needs_gpus(asked) or runs_on_cpu_without_api(asked))
            nodes = self.nodes.as_ray_nodes()
        else:
            nodes = self._ray_nodes()
        try:
            decision = self.decision = decide_device(cfg, asked, nodes)
        except ConfigError as exc:
            raise refuse(f"pkb: {exc}")
        if not decision.models:
            return asked
        self.fallback = (f"{','.join(m.name for m in asked)} -> {','.join(decision.models)}: "
                         f"no Ray node with >= {cfg.eval.world_size} GPUs (CPU self-check)")
        return [load_model_config(name) for name in decision.models]

    def _select_problems(self, loaded: dict[str, Problem]) -> None:
        """The problems the cells cover on the decided device: on CPU with `problems=auto`,
        the representative set (`problems.cpu_ids`); those that run at the world size."""
        from pkb_ray.driver.plan import at_world_size

        cfg = self.cfg
        if self.decision.device == "cpu" and cfg.problems.cpu_ids and not cfg.problems.ids:
            loaded = self._representative(loaded)
            self.problem_note = (f"{len(loaded)} representative problems, one per category "
                                 "(problems=all runs every problem)")
        self.problems, self.left_out = at_world_size(loaded, cfg.eval.world_size)
        if not self.problems:
            self._no_problem_at_world_size(self.left_out)
        self.categories = {pid: p.spec.category for pid, p in self.problems.items()}
        if self.left_out:
            say(f"pkb: {self.left_out}")
        if self.decision.notice:
            say(self.decision.notice)
        if self.problem_note:
            say(f"pkb: {self.problem_note}")

    def _representative(self, loaded: dict[str, Problem]) -> dict[str, Problem]:
        """`problems.cpu_ids` among the loaded problems; one that did not load was said."""
        from pkb_ray.problems import builtin_dir
        from pkb_ray.problems.common import unknown_id_error

        source = self.cfg.problems.source
        failed = {e.problem for e in self._load_errors}
        unknown = [pid for pid in self.cfg.problems.cpu_ids if pid not in loaded and pid not in failed]
        if unknown:
            where = str(builtin_dir()) if source == "builtin" else source
            for pid in unknown:
                say(f"pkb: {unknown_id_error(pid, sorted(loaded), where)}")
            raise refuse("pkb: fix the problem selection above (problems.cpu_ids / problems.source)")
        return {pid: loaded[pid] for pid in self.cfg.problems.cpu_ids if pid in loaded}

    def _check_models(self) -> None:
        """Refuse models that cannot run on the device or in the mode (nothing has run)."""
        from pkb_ray.driver.plan import device_refusals

        refused = device_refusals(self.models, self.decision.device)
        if refused:
            raise refuse("pkb: " + "\n  ".join(refused) + "\nNothing ran. Evaluate on GPUs (eval.device=cuda "
                         "on a GPU node or cluster), or check the pipeline on CPU with model=reference.")
        refused = self.mode.refusals(self.cfg, self.models)
        if refused:
            raise refuse(f"pkb: mode={self.mode.name}: " + "\n  ".join(refused) + "\nNothing ran.")

    def _plan_cells(self, dry_run: bool) -> SweepPlan:
        """Phase 3: every cell with the identity it is recorded under, against the journal.
        An API cell's identity holds its prompt's hash, so the prompts' hardware profile
        comes first (asked of the evaluators, driver/hardware_probe.py; a dry run asks none)."""
        from pkb_ray.driver.hardware_probe import sweep_profile
        from pkb_ray.driver.identity import default_sweep_name, refusal, settings_changes, sweep_settings
        from pkb_ray.driver.plan import build_plan

        cfg, decision = self.cfg, self.decision
        if self.auto_named:
            cfg.sweep.name = default_sweep_name(cfg, [m.name for m in self.models], decision.device)
        settings = sweep_settings(cfg, decision.device, decision.size, HARNESS_VERSION)
        self.sweep_dir = Path(cfg.sweep.root) / cfg.sweep.name
        recorded = self._recorded()
        self.profile = sweep_profile(cfg, decision.device, self.models, self.sweep_dir,
                                     measure=None if dry_run else self._node_profile)
        self.context = self._prompt_context()
        changes = settings_changes(recorded, settings)
        if changes:
            raise refuse("pkb: " + refusal(cfg.sweep.name, changes, len(recorded)))
        return build_plan(cfg, self.models, self.problems, settings, self.context, device=decision.device,
                          size=decision.size, harness_version=HARNESS_VERSION,
                          done={r.record_id for r in recorded}, evaluators=self._evaluators(),
                          shared=decision.device == "cuda" and decision.gpu_slots > decision.gpu_nodes)

    def _recorded(self) -> list[CellResult]:
        """The cells the sweep's journal holds (none when it starts over)."""
        journal_path = self.sweep_dir / "journal.jsonl"
        try:
            return read_journal(journal_path) if journal_path.exists() and not self.cfg.sweep.fresh else []
        except RecordError as exc:
            raise refuse(f"pkb: {exc}")

    def _node_profile(self) -> Any:
        """The hardware profile the prompts describe, asked of the sweep's own evaluators:
        started here (the run keeps them), the first one's node measured."""
        from pkb_ray.driver.hardware_probe import evaluator_profile

        self._probed = self._start_actors()
        return evaluator_profile(self._probed, self.cfg.eval.world_size, self.cfg.eval.cache_dir)

    def _prompt_context(self) -> Any:
        """What every prompt describes: the evaluation, the measured hardware, and (where
        prompts are built) the problems' inputs, described once here."""
        from pkb_ray.generation.sources import source_for

        d = self.decision
        context = prompt_context(self.cfg, d.device, d.size, self.profile.profile if self.profile else None)
        if any(source_for(m).calls_api for m in self.models):
            context = context.with_inputs(self.problems)
        return context

    def _ray_nodes(self) -> list[dict]:
        """The cluster's nodes (Ray started here, or joined at cluster.address)."""
        import ray

        from pkb_ray.driver.ray_runtime import init_ray

        try:
            init_ray(self.cfg)
        except ConnectionError as exc:
            raise refuse(f"pkb: cannot reach the Ray cluster at cluster.address={self.cfg.cluster.address}: {exc}")
        return ray.nodes()

    def estimate(self, plan: SweepPlan) -> list[str]:
        """What the plan's pending cells should cost (a dry run's last lines): the GPU time on
        the planned nodes and the API spend, each with its assumptions."""
        from pkb_ray.driver.estimate import GpuEstimate, api_costs, api_lines

        pending = plan.pending
        nodes = self.nodes
        lines = [f"pkb: {nodes.note}"] if nodes is not None and nodes.note and plan.device == "cuda" else []
        if plan.device == "cuda" and pending and nodes is not None and nodes.node is not None:
            lines += GpuEstimate(nodes.node, nodes.count, plan.world_size, self.cfg.eval.exclusive,
                                 len(pending)).lines()
        tokens = plan.prompt_tokens
        if tokens and pending:
            per_model: dict[str, int] = {}
            for c in pending:
                per_model[c.key.model] = per_model.get(c.key.model, 0) + 1
            mean = sum(tokens.values()) / len(tokens)
            lines += api_lines(api_costs(self.models, per_model, mean, self.cfg), mean, self.cfg, self.missing_keys)
        if not pending:
            lines.append("nothing to run: every planned cell is recorded")
        return lines

    def _plan_digest(self) -> str:
        from pkb_ray.driver.done_check import plan_digest

        return plan_digest(OmegaConf.to_container(self.dcfg, resolve=True), HARNESS_VERSION,  # type: ignore[arg-type]
                           self.cfg.problems.source)

    def _nothing_to_run(self) -> bool:
        """True (and said) when the last plan of this very config is wholly recorded: no Ray,
        no model, no problem loaded (driver/done_check.py). A default-named sweep is found by
        its plan digest, as its name holds the device that Ray would resolve."""
        from pkb_ray.driver.done_check import cells_all_done, remembered_name

        digest = self._plan_digest()
        name = self.cfg.sweep.name or remembered_name(Path(self.cfg.sweep.root), digest)
        if name is None:
            return False
        sweep_dir = Path(self.cfg.sweep.root) / name
        n = cells_all_done(sweep_dir, digest)
        if n is None:
            return False
        say(f"pkb: sweep {name!r}: all {n} cells done; nothing to run "
            f"(leaderboard {sweep_dir / 'leaderboard.md'}; sweep.fresh=true starts over)")
        return True

    # -- 2. sinks --------------------------------------------------------------------
    @contextlib.contextmanager
    def open_sinks(self, plan: SweepPlan) -> Iterator[None]:
        """Open the journal (and the turn log, where the mode keeps one), note this invocation
        in the sweep's config.yaml, open the trackers and reconcile them with the journal;
        closed on exit."""
        from pkb_ray.driver.done_check import keep_plan, remember_name
        from pkb_ray.driver.hardware_probe import keep_profile
        from pkb_ray.driver.invocations import append_invocation
        from pkb_ray.modes.tools import EPISODES_DIR

        cfg = self.cfg
        self.sweep_plan = plan
        # Every check passed: from here on the sweep's directory changes.
        new = not (self.sweep_dir / "journal.jsonl").exists()
        journal = self.journal = Journal(self.sweep_dir / "journal.jsonl", fresh=cfg.sweep.fresh)
        tries_path = self.sweep_dir / "harness_tries.jsonl"
        if cfg.sweep.fresh and tries_path.exists():
            tries_path.rename(self.sweep_dir / f"harness_tries.{time.strftime('%Y%m%d-%H%M%S')}.jsonl")
        self.harness_tries = HarnessTries(tries_path)
        try:
            append_invocation(self.sweep_dir / "config.yaml", self._ran_config(), plan.sweep_settings)
            keep_plan(self.sweep_dir, self._plan_digest(), plan.planned_ids().values())
            if self.auto_named:  # the same command finds this sweep again before Ray starts
                remember_name(Path(cfg.sweep.root), self._plan_digest(), cfg.sweep.name)
            if self.auto_named and new:
                say(f"pkb: a new sweep, {cfg.sweep.name!r}: named from what it runs and the settings that "
                    "change a cell's result; the same command resumes it (sweep.name=NAME names one)")
            for note in plan.notes:
                say(f"pkb: {note}")
            for line in plan.header():
                say(line)
            try:
                self.trackers = trackers_for(cfg, self._run_params())
            except SweepConflict as exc:  # another directory's sweep of this name, on a shared store
                raise refuse(f"pkb: {exc}") from None
            for tracker in self.trackers:
                relogged = tracker.reconcile(self._current(), fresh=cfg.sweep.fresh)
                if relogged:
                    say(f"pkb: re-logged {relogged} journal cells missing from MLflow")
            self.budget = Budget.resumed(cfg.budget_usd, journal.records())
            if self.mode.keeps_turn_log:
                self.turn_log = TurnLog(self.sweep_dir / "turns.jsonl", fresh=cfg.sweep.fresh)
            if self.profile is not None:  # the first run's, for every later run's prompts
                keep_profile(self.sweep_dir, self.profile)
            episodes = self.sweep_dir / EPISODES_DIR
            if cfg.sweep.fresh and episodes.exists():  # the tools mode's episode journals start over too
                episodes.rename(self.sweep_dir / f"{EPISODES_DIR}.{time.strftime('%Y%m%d-%H%M%S')}")
            yield
        finally:
            journal.close()
            if self.turn_log:
                self.turn_log.close()

    def _evaluators(self) -> int:
        """Evaluations the cluster runs at once (GPU groups of every node, driver/slots.py)."""
        d = self.decision
        return max(1, d.gpu_slots or d.gpu_nodes) if d.device == "cuda" else max(1, self.cfg.cluster.cpu_evaluators)

    def _ran_config(self) -> dict[str, Any]:
        """The composed config as it ran: the models and problems the device decision chose
        (after a CPU fallback: `reference`, not the `expert` asked for), and why."""
        config: dict[str, Any] = OmegaConf.to_container(self.dcfg)  # type: ignore[assignment]
        if self.fallback:
            config["model"] = OmegaConf.to_container(OmegaConf.structured(self.models[0]))
            config["models"] = [m.name for m in self.models]
            config["fallback"] = self.fallback
        if self.problem_note:
            config["problems"]["ids"] = sorted(self.problems)
        return config

    def _run_params(self) -> dict[str, str]:
        cfg, plan = self.cfg, self.sweep_plan
        return {
            **{k.replace("eval.", "").replace(".", "_"): v for k, v in plan.sweep_settings.items()
               if k.count(".") <= 1},
            "models": ",".join(m.name for m in self.models),
            "problems": str(len(self.problems)),
            "attempts": str(cfg.attempts),
            "mode": cfg.mode.name,
            "cells_planned": str(len(plan.cells)),
            **({"fallback": self.fallback} if self.fallback else {}),
        }

    def _current(self) -> list[CellResult]:
        return current_records(self.journal.records(), self.sweep_plan.planned_ids())

    # -- 3. run ----------------------------------------------------------------------
    def run(self, plan: SweepPlan) -> None:
        """Run the plan's pending cells through the pipeline, recording each as it lands. An
        interrupt or an internal error ends it with what is recorded kept (self.status)."""
        from pkb_ray.driver import ray_runtime

        cfg = self.cfg
        pending = plan.states()
        per_model = {m.name: sum(1 for c in pending if c.key.model == m.name) for m in self.models}
        prior = plan.estimate_s() - STARTUP_S.get(plan.device, 0.0) if pending else None
        self.progress = SweepProgress(per_model, enabled=cfg.sweep.progress, evaluators=plan.evaluators,
                                      prior_s_per_cell=prior / len(pending) if prior is not None else None)
        try:
            evaluators = self._slots(self._probed or self._start_actors()) if pending else []
            stages = self.mode.stages(StageSettings(
                cfg, {m.name: m for m in self.models}, plan.device, plan.size, self.context, self.sweep_dir,
                api_allowed=lambda: not self.budget.exhausted(), turn_log=self.turn_log))
            with self.progress:
                self._pipeline = Pipeline(
                    pending, stages, evaluators, record=self._record, defer=self._defer,
                    wait=ray_runtime.wait, get=ray_runtime.get,
                    max_inflight_generations=cfg.cluster.max_inflight_generations,
                    max_queued_builds=cfg.cluster.max_queued_builds,
                    replace_evaluators=lambda: self._slots(self._start_actors()), tick=self._tick,
                    turn_done=self._turn_done, spent=lambda gen: self.budget.charge([gen]),
                    harness_tries=lambda state, message: self.harness_tries.add(state.record_id, message),
                    same_node=lambda a, b: a.actor is b.actor,
                )
                self._pipeline.run()
        except Refused:  # said where raised (a node's shared actor runs other settings)
            self.status = "FAILED"
        except KeyboardInterrupt:
            self.status = "KILLED"
            say("pkb: interrupted; every recorded cell is in the journal. Re-run the same command to continue.")
        except Exception:  # a harness bug: keep what is recorded, say so, report, exit non-zero
            self.status = "FAILED"
            say("pkb: the sweep stopped on an internal error; every recorded cell is in the journal:")
            traceback.print_exc()
        finally:
            for tracker in self.trackers:
                tracker.flush()
            self._close_evaluators()

    def _start_actors(self) -> list:
        """The node actors of the decided device (whole GPU nodes on cuda), started and up;
        each is closed at the end of the run, except shared ones (cluster.share_nodes), which
        other sweeps may still be evaluating on."""
        from pkb_ray.engine import SharedNodeMismatch, start_node_evaluators

        cluster = self.cfg.cluster
        share = cluster.share_nodes and self.decision.placement == "gpu_node"
        try:
            actors = start_node_evaluators(self.decision.device, self.cfg.eval.world_size, self.decision.placement,
                                           cluster.cpu_evaluators, exclusive=self.cfg.eval.exclusive,
                                           evaluator_class=self.evaluator_class, node_gpus=cluster.node_gpus,
                                           share=share)
        except SharedNodeMismatch as exc:
            raise refuse(f"pkb: {exc}")
        if not share:
            self._actors.extend(actors)
        return actors

    def _slots(self, actors: list) -> list:
        """The node actors as slots: one per evaluation each runs at once (driver/slots.py)."""
        from pkb_ray.driver.ray_runtime import evaluator_labels
        from pkb_ray.driver.slots import slots_of

        return slots_of(actors, self.cfg.eval.world_size, evaluator_labels(actors))

    def _close_evaluators(self) -> None:
        """Close every node actor started so far (their sandboxes and run roots go)."""
        from pkb_ray.driver import ray_runtime

        if self._actors:
            ray_runtime.close_evaluators(self._actors)

    def _turn_done(self, state: CellState) -> None:
        """A mode that keeps a turn log: a turn's outcome goes there before the next turn
        starts, so a resumed sweep does not evaluate it again."""
        outcome = state.current.outcome()
        if self.turn_log is not None and outcome is not None:
            self.turn_log.put(state.record_id, state.turn, outcome)

    def _record(self, state: CellState) -> None:
        result = self.mode.finalize(state, self.categories.get(state.key.problem, ""))
        node_version = result.evaluation.harness_version if result.evaluation else ""
        if node_version and node_version != HARNESS_VERSION:
            # Recorded under this driver's identity it would claim a harness it was not
            # measured by: keep it out, and say how to fix the cluster.
            self._defer(state, f"harness_error: the evaluating node runs harness {node_version}, "
                               f"this driver {HARNESS_VERSION}: install one checkout on every node")
            return
        if self.journal.append(result):  # its spend was charged as it came (Pipeline `spent`)
            for tracker in self.trackers:
                tracker.log_cell(result)
        how = result.status.value + (f" ({result.failure.value})" if result.failure and result.status.value == "failed"
                                     else f" {result.speedup:.2f}x" if result.speedup is not None else "")
        self.progress.update(state.key.model, result.status.value, result.generation.cost_usd,
                             last=f"{self._label(state)}: {how}")

    def _defer(self, state: CellState, reason: str) -> None:
        self.deferred.append(f"{state.key.cell_id}: {reason}")
        self.progress.update(state.key.model, "deferred", last=f"{self._label(state)}: deferred")

    def _label(self, state: CellState) -> str:
        """`allreduce a1`, with the model when the sweep has several."""
        key = state.key
        return f"{key.model + '/' if len(self.models) > 1 else ''}{key.problem} a{key.attempt}"

    def _tick(self) -> None:
        if self._pipeline is None:
            return
        generating, building, queued = self._pipeline.counts()
        nodes: dict[str, list[str]] = {}
        for slot, state in self._pipeline.evaluating():
            nodes.setdefault(slot.node, []).append(self._label(state))
        self.progress.set_in_flight(InFlight(generating, building, queued, nodes))

    # -- 4. finish -------------------------------------------------------------------
    def finish(self) -> int:
        """The leaderboard of the sweep's current cells, printed, written beside the journal
        and given to the trackers, which are then closed; returns the exit status."""
        self._report()
        if self.status == "KILLED":
            return EXIT_INTERRUPTED
        if self.status == "FAILED":
            return EXIT_INTERNAL_ERROR
        if self.budget.exhausted():
            say(self.budget.exhausted_message())
        if self.deferred:
            say(f"pkb: {len(self.deferred)} cells deferred (not recorded; a re-run retries them):")
            for line in self.deferred[:20]:
                say(f"  {line}")
            return EXIT_INCOMPLETE
        return EXIT_OK

    def _report(self) -> None:
        from pkb_ray.report.leaderboard import build_report, print_leaderboard
        from pkb_ray.report.metrics import summary_metrics
        from pkb_ray.report.tables import cell_table

        cfg = self.cfg
        records = self._current()
        title = f"sweep {cfg.sweep.name}: {len(records)} cells recorded"
        report = build_report(records, self.sweep_dir, title)
        if records:
            from pkb_ray.generation.sources import source_for

            root = "" if cfg.sweep.root == "sweeps" else f" --root {cfg.sweep.root}"
            print_leaderboard(report, title, self_check=all(source_for(m).times_itself for m in self.models),
                              report_args=f"{cfg.sweep.name}{root}")
        say(f"pkb: {self.progress.summary()}; leaderboard {report.markdown_path} (per problem: "
            f"{report.problems_csv_path.name}, heatmap: {_pages(report.heatmap_pages)})")
        if not self.trackers:
            return
        summary = SweepSummary(summary_metrics(report.summaries), report.files(), report.curves or {},
                               cell_table(records), sorted(report.facts.hardware) if report.facts else [])
        for tracker in self.trackers:
            tracker.log_sweep(summary)
            for err in tracker.close(self.status):
                say(f"pkb: {err}")
        say(f"pkb: MLflow: pkb ui --uri {cfg.tracking.uri}  (experiment {cfg.sweep.name!r}; "
            f"or LITELLM_LOCAL_MODEL_COST_MAP=True mlflow ui --backend-store-uri {cfg.tracking.uri})")


def _pages(paths: list[Path]) -> str:
    """`heatmap.png`, or `heatmap.png .. heatmap_3.png (3 pages)`."""
    if not paths:
        return "-"
    return paths[0].name if len(paths) == 1 else f"{paths[0].name} .. {paths[-1].name} ({len(paths)} pages)"
