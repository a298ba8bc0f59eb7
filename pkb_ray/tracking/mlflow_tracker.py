"""MLflow tracking: one experiment per sweep name, one parent run per invocation, one child
run per cell.

Made for comparing: the experiment opens in MLflow's model-training view
(`mlflow.experimentKind`), cell runs are named `model/problem/aN` with their settings as
params and their figures as metrics, and the experiment holds the view of the runs table
that `pkb ui` opens (runs_view.py: cells flat, the comparison's columns first, the newest
parent run pinned on top). The parent run holds the sweep's settings, its leaderboard files,
a model x problem heatmap and one table of every cell (`mlflow.log_table`).

The store is a local one (SQLite or a database URI, artifacts in a local folder) or an
MLflow tracking server (`http(s)://`), which keeps the artifacts itself; credentials for
either come from the environment (config/validate.py refuses a password in the URI).

The driver is the only writer. Child runs are written by one background thread so the
pipeline never waits on SQLite (about 39 ms per child run with five text artifacts,
measured on a 2-core CPU machine). The journal is written first; on start-up the tracker
reconciles MLflow with the journal, so a kill at any moment leaves each cell in MLflow
exactly once after the next run.
"""

from __future__ import annotations

import json
import logging
import math
import queue
import threading
import time
from pathlib import Path
from typing import Any, Iterable

from pkb_ray.modes import recorded_mode
from pkb_ray.records import CellResult, to_plain
from pkb_ray.report.tables import figures
from pkb_ray.tracking.owner import OWNER_TAG, SweepConflict, conflict_message
from pkb_ray.tracking.redact import redact, secret_values
from pkb_ray.tracking.runs_view import INTERVAL_TAG, KIND_TAG, VIEW_KEY, VIEW_TAG, interval_text, runs_view
from pkb_ray.tracking.tracker import SweepSummary

log = logging.getLogger(__name__)

CELL_TAG = "pkb.cell_id"
RECORD_TAG = "pkb.record_id"
COMPLETE_TAG = "pkb.complete"
PARENT_TAG = "mlflow.parentRunId"
EXPERIMENT_KIND_TAG = "mlflow.experimentKind"
TRAINING_KIND = "custom_model_development"
"""MLflow 3's UI opens such an experiment on its runs table, not the GenAI overview."""
CELLS_TABLE = "cells_table.json"

__all__ = ["CELL_TAG", "COMPLETE_TAG", "KIND_TAG", "MlflowTracker", "RECORD_TAG", "VIEW_KEY", "VIEW_TAG",
           "cell_artifacts", "cell_metrics", "cell_params", "parent_run_name", "run_name", "runs_view"]

_STOP = object()


def run_name(result: CellResult) -> str:
    """`model/problem/aN` (and `/agent` in agent mode, as each mode names itself): readable
    in the runs table."""
    name = f"{result.key.model}/{result.key.problem}/a{result.key.attempt}"
    return recorded_mode(result.key.mode).label(name, "{base}/{mode}")


def parent_run_name(when: float) -> str:
    """What the pinned parent row says: what clicking it opens, and which invocation."""
    return f"leaderboard {time.strftime('%Y-%m-%d %H:%M', time.localtime(when))}"


def cell_params(result: CellResult) -> dict[str, str]:
    ev = result.evaluation
    gen = result.generation
    ident = result.identity
    return {
        "model": result.key.model,
        "problem": result.key.problem,
        "category": result.category,
        "attempt": str(result.key.attempt),
        "mode": result.key.mode,
        "device": ident.get("eval.device") or (ev.device if ev else ""),
        "world_size": ident.get("eval.world_size") or str(result.world_size),
        "size": ident.get("eval.size") or (ev.size if ev else ""),
        "trials": ident.get("eval.trials") or (str(ev.trials) if ev else ""),
        "hardware_fingerprint": result.hardware_fingerprint or "",
        "harness_version": ident.get("harness_version") or result.harness_version or "",
        "problem_version": ident.get("problem_version", ""),
        "prompt_hash": gen.prompt_hash,
        # What the evaluation shared (engine/gpu_groups.py): its GPUs, how the node was
        # shared, and the weakest link inside its group.
        "gpus": ev.gpus if ev else "",
        "sharing": ev.sharing if ev else "",
        "gpu_link": ev.gpu_link if ev else "",
    }


def cell_metrics(result: CellResult) -> dict[str, float]:
    ev = result.evaluation
    gen = result.generation
    values: dict[str, Any] = {
        "compiled": float(bool(ev and ev.compiled)),
        "correct": float(bool(ev and ev.correct)),
        **figures(ev),
        "tokens": float(gen.tokens),
        "cost_usd": gen.cost_usd,
        "latency_s": gen.latency_s,
        "node_seconds": ev.node_seconds if ev else None,
        "co_tenancy": ev.co_tenancy if ev else None,
        # Tools mode: the device-seconds of every tool call, the cell's GPU cost besides
        # its submission's evaluation.
        "tool_calls": float(len(result.turns)) if any(t.tool for t in result.turns) else None,
        "tool_device_s": sum(t.device_s for t in result.turns) if any(t.tool for t in result.turns) else None,
    }
    # 4 significant digits: a readable runs table (timing noise is ~0.4% at best; the
    # journal keeps every digit).
    return {k: float(f"{float(v):.4g}") for k, v in values.items()
            if v is not None and math.isfinite(float(v))}


def cell_artifacts(result: CellResult) -> dict[str, str]:
    ev = result.evaluation
    gen = result.generation
    files = {
        "prompt.txt": gen.prompt,
        "response.txt": gen.response or "",
        "candidate.py": gen.candidate_source or "",
        "build_log.txt": ev.build_log if ev else "",
        "eval_log.txt": ev.log if ev else "",
    }
    if result.turns:
        files["conversation.json"] = json.dumps(to_plain(result.turns), indent=1)
    return files


class MlflowTracker:
    """The Tracker protocol (tracking/tracker.py) on MLflow."""

    def __init__(self, uri: str, experiment: str, artifact_root: Path | None,
                 run_params: dict[str, str], owner: str | None = None):
        """`artifact_root`: where a new experiment keeps its artifacts on a local store;
        None for a tracking server, which chooses. `owner`: the sweep directory's id
        (owner.py); raises SweepConflict when the experiment mirrors another one."""
        from mlflow.tracking import MlflowClient

        self.client = MlflowClient(tracking_uri=uri)
        self.uri = uri
        self.experiment_id = self._open_experiment(experiment, artifact_root)
        if owner is not None:
            self._claim(experiment, owner)
        self.client.set_experiment_tag(self.experiment_id, EXPERIMENT_KIND_TAG, TRAINING_KIND)
        self._close_stale_parents()
        self.parent_id = self.client.create_run(
            self.experiment_id, run_name=parent_run_name(time.time()), tags={KIND_TAG: "sweep"},
        ).info.run_id
        self.client.set_experiment_tag(self.experiment_id, VIEW_TAG, json.dumps(runs_view(self.parent_id)))
        self._secrets = secret_values()
        self.client.log_batch(self.parent_id, params=_params(run_params, self._secrets))
        self._queue: queue.Queue = queue.Queue()
        self._errors: list[str] = []
        self._thread = threading.Thread(target=self._writer, name="mlflow-writer", daemon=True)
        self._thread.start()

    def _open_experiment(self, name: str, artifact_root: Path | None) -> str:
        """The experiment named `name`, made (or restored) when needed. Two drivers that
        make it at once on a shared server both get the one that won."""
        from mlflow.exceptions import MlflowException

        exp = self.client.get_experiment_by_name(name)
        if exp is None:
            location = (Path(artifact_root).resolve() / name).as_uri() if artifact_root else None
            try:
                return self.client.create_experiment(name, artifact_location=location)
            except MlflowException as exc:
                if exc.error_code != "RESOURCE_ALREADY_EXISTS":
                    raise
                exp = self.client.get_experiment_by_name(name)
                if exp is None:
                    raise
        if exp.lifecycle_stage == "deleted":
            self.client.restore_experiment(exp.experiment_id)
        return exp.experiment_id

    def _claim(self, experiment: str, owner: str) -> None:
        """Tag the experiment with `owner`, or refuse when another sweep directory holds it.
        Read back after writing: of two first runs at once, the one that lost is refused."""
        held = self.client.get_experiment(self.experiment_id).tags.get(OWNER_TAG)
        if held is None:  # a new experiment, or one made before experiments had owners
            self.client.set_experiment_tag(self.experiment_id, OWNER_TAG, owner)
            held = self.client.get_experiment(self.experiment_id).tags.get(OWNER_TAG)
        if held != owner:
            raise SweepConflict(conflict_message(experiment, self.uri, held or "", owner))

    # -- reconciliation ------------------------------------------------------------
    def _close_stale_parents(self) -> None:
        """A parent left RUNNING belongs to a driver that was killed."""
        for run in self._search(f"tags.`{KIND_TAG}` = 'sweep' and attributes.status = 'RUNNING'"):
            self.client.set_terminated(run.info.run_id, status="KILLED")

    def _search(self, filter_string: str) -> Iterable[Any]:
        token = None
        while True:
            page = self.client.search_runs(
                [self.experiment_id], filter_string, max_results=5000, page_token=token
            )
            yield from page
            token = page.token
            if not token:
                return

    def reconcile(self, records: list[CellResult], fresh: bool = False) -> int:
        """Make MLflow hold exactly one complete child run per journal record.

        Returns how many cells were (re)logged. Runs for records not in `records` (a previous
        `sweep.fresh=true` generation, or a record superseded under other settings) are
        soft-deleted: restorable, not lost.
        """
        wanted = {r.record_id: r for r in records}
        complete: dict[str, str] = {}
        for run in self._search(f"tags.`{KIND_TAG}` = 'cell'"):
            tags = run.data.tags
            record_id = tags.get(RECORD_TAG) or tags.get(CELL_TAG, "")
            is_complete = tags.get(COMPLETE_TAG) == "true"
            if fresh or record_id not in wanted or not is_complete or record_id in complete:
                self.client.delete_run(run.info.run_id)
            else:
                complete[record_id] = run.info.run_id
        missing = [r for cid, r in wanted.items() if cid not in complete]
        for record in missing:
            self.log_cell(record)
        return len(missing)

    # -- child runs ------------------------------------------------------------------
    def log_cell(self, result: CellResult) -> None:
        """Queue one cell for the writer thread (returns at once)."""
        self._queue.put(result)

    def _writer(self) -> None:
        while True:
            item = self._queue.get()
            try:
                if item is _STOP:
                    return
                self._write_cell(item)
            except Exception as exc:  # keep writing other cells; the journal has this one
                msg = f"MLflow write failed for {getattr(item, 'key', item)}: {exc!r}"
                log.error(msg)
                self._errors.append(msg)
            finally:
                self._queue.task_done()

    def _write_cell(self, result: CellResult) -> None:
        from mlflow.entities import Metric, RunTag

        tags = {
            KIND_TAG: "cell",
            CELL_TAG: result.key.cell_id,
            RECORD_TAG: result.record_id,
            PARENT_TAG: self.parent_id,
            "mlflow.runName": run_name(result),
            "status": result.status.value,
            "failure_class": result.failure.value if result.failure else "none",
        }
        ev = result.evaluation
        interval = interval_text(ev.speedup_ci_low, ev.speedup_ci_high) if ev else ""
        if interval:
            tags[INTERVAL_TAG] = interval
        run = self.client.create_run(self.experiment_id, tags=tags)
        run_id = run.info.run_id
        ts = int(time.time() * 1000)
        metrics = [Metric(k, v, ts, 0) for k, v in cell_metrics(result).items()]
        for turn in result.turns:
            for key, value in (("correct", float(turn.correct)), ("speedup", turn.speedup),
                               ("cost_usd", turn.cost_usd), ("device_s", turn.device_s if turn.tool else None)):
                if value is not None:
                    metrics.append(Metric(f"turn_{key}", float(value), ts, turn.turn))
        self.client.log_batch(
            run_id,
            metrics=metrics,
            params=_params(cell_params(result), self._secrets),
            tags=[RunTag("failure_message", redact(result.message[:4000], self._secrets))],
        )
        # The artifact store is local for a file:// location: write the files straight into
        # the run's artifact directory (log_text would copy each through a temp file).
        art = _local_path(run.info.artifact_uri)
        for name, text in cell_artifacts(result).items():
            if not text:
                continue
            text = redact(text, self._secrets)
            if art is not None:
                art.mkdir(parents=True, exist_ok=True)
                (art / name).write_text(text, encoding="utf-8")
            else:
                self.client.log_text(run_id, text, name)
        self.client.set_tag(run_id, COMPLETE_TAG, "true")
        self.client.set_terminated(run_id, status="FINISHED")

    def flush(self) -> None:
        self._queue.join()

    # -- sweep summary -----------------------------------------------------------
    def log_sweep(self, summary: SweepSummary) -> None:
        self.log_summary(summary.metrics, summary.files, summary.curves, summary.cells,
                         summary.hardware)

    def log_summary(
        self,
        metrics: dict[str, float],
        files: list[Path],
        curves: dict[str, dict[str, list[float]]] | None = None,
        cells: dict[str, list] | None = None,
        hardware: list[str] | None = None,
    ) -> None:
        """Parent-run metrics; the curves over steps as `<model>/<mode>/<curve>` with step =
        turn or tool call (`a/agent/pass_at_turn`, `a/tools/submitted_at_step`);
        the leaderboard files (heatmap included) as artifacts; `cells` (one row per cell,
        as columns) as an MLflow table; `hardware` fingerprints of the cells as a tag."""
        from mlflow.entities import Metric

        from pkb_ray.report.turn_curves import curve_metric_key

        ts = int(time.time() * 1000)
        batch = [Metric(k, v, ts, 0) for k, v in metrics.items() if v is not None and math.isfinite(v)]
        for model, named in (curves or {}).items():
            for name, values in named.items():
                key = curve_metric_key(model, name)
                batch += [Metric(key, v, ts, turn) for turn, v in enumerate(values, 1)]
        for i in range(0, len(batch), 1000):  # MLflow caps a batch at 1000 metrics
            self.client.log_batch(self.parent_id, metrics=batch[i : i + 1000])
        for path in files:
            self.client.log_artifact(self.parent_id, str(path))
        if cells and any(cells.values()):
            try:
                self.client.log_table(self.parent_id, data=cells, artifact_file=CELLS_TABLE)
            except ImportError:  # log_table needs pandas, which a slim GPU image may lack
                self.client.log_dict(self.parent_id, table_json(cells), CELLS_TABLE)
        if hardware:
            self.client.set_tag(self.parent_id, "hardware_fingerprint", ", ".join(hardware))

    def close(self, status: str = "FINISHED") -> list[str]:
        """Drain the writer, end the parent run; returns write errors (already logged)."""
        self._queue.put(_STOP)
        self._thread.join()
        self.client.set_terminated(self.parent_id, status=status)
        return list(self._errors)


def table_json(cells: dict[str, list]) -> dict[str, Any]:
    """The cells table in the layout `log_table` writes (`columns` + row-major `data`)."""
    names = list(cells)
    return {"columns": names, "data": [list(row) for row in zip(*(cells[n] for n in names))]}


def _params(values: dict[str, str], secrets: list[str]) -> list[Any]:
    from mlflow.entities import Param

    return [Param(k, redact(str(v), secrets)[:6000]) for k, v in values.items()]


def _local_path(uri: str) -> Path | None:
    if uri.startswith("file://"):
        from urllib.parse import unquote, urlparse

        return Path(unquote(urlparse(uri).path))
    if uri.startswith("/"):
        return Path(uri)
    return None
