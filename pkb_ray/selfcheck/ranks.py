"""Run a per-problem task in real rank processes, many problems per group: gloo ranks on
CPU, or one process per GPU with NCCL (and a gloo group for host barriers) on CUDA.

World-size rank processes start ONCE and loop over the problems (a process start with torch
import and gloo init costs ~2-3 s; 90 problems x that would dominate). A rank whose task
fails stops (its collectives may now be out of step with its peers'); the others may hang in
a collective it skipped. The parent notices (all ranks reported, or one reported an error
and the rest stay silent for `grace_s`, or a problem overruns its time), kills the group,
marks that problem failed and starts a fresh group for the problems after it.

Used by `pkb problems check` (task: check.check_one, or audit's AuditTask) and by
tests/selfcheck/test_semantics.py (task: the outputs, compared with each problem's
truth.py). The processes are started by the harness's one rank launcher (launcher.py);
ranks report on their own pipes.
"""

from __future__ import annotations

import os
import socket
import time
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, Callable

from pkb_ray.selfcheck.launcher import RankExited, RankFailed, RankGroup, RankSent, describe, send
from pkb_ray.problems.memory import ProblemTooLarge

Task = Callable[[Any, int, int], Any]
"""task(problem, rank, world_size) -> a picklable payload; runs after the process group exists
(on CUDA, with this rank's GPU, cuda:RANK, made current)."""

DEVICES = ("cpu", "cuda")

MULTICAST_OFF = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}
"""NVLink multicast stays off on the GPU nodes (DESIGN.md): set in every rank process, before
NCCL or symmetric memory reads its environment."""

_host_group: Any = None
"""In a CUDA rank: a gloo group over the same ranks, for barriers and small agreements on the
host that leave the GPU's streams alone."""


@dataclass(frozen=True)
class RankReport:
    """What one rank said about one problem."""

    ok: bool
    payload: Any
    """The task's return value (None when it failed)."""
    error: str
    seconds: float
    arrival: int
    """Order of arrival among the problem's reports: the first failure is the cause; later
    ones are often peers seeing "connection closed" after the failing rank stopped."""


@dataclass(frozen=True)
class _Outcome:
    """A rank's word on one problem (sent to the parent)."""

    problem: str
    ok: bool
    payload: Any
    error: str
    seconds: float


@dataclass(frozen=True)
class _StartFailed:
    """The rank never reached the first problem (gloo init, loading)."""

    text: str


@dataclass
class ProblemRun:
    """Every rank's report on one problem, or why the group gave up on it."""

    problem: str
    reports: dict[int, RankReport] = field(default_factory=dict)
    failure: str = ""
    """Empty when every rank reported success."""

    @property
    def ok(self) -> bool:
        return not self.failure

    @property
    def seconds(self) -> float:
        return max((r.seconds for r in self.reports.values()), default=0.0)


def run_in_ranks(world_size: int, source: str, ids: list[str], task: Task,
                 problem_timeout_s: float = 120.0, grace_s: float = 10.0, *, device: str = "cpu",
                 on_result: Callable[[ProblemRun], None] | None = None,
                 stop_at: float | None = None) -> dict[str, ProblemRun]:
    """`task` on every rank for each problem of `ids` (in order); one ProblemRun per id.
    `task` must be importable by name (a module-level function, or an instance of a
    module-level class): ranks are spawned. `on_result` hears each ProblemRun as it is
    decided. At `stop_at` (time.monotonic()) the group is killed and the problems not
    decided yet are left out of the result."""
    if device not in DEVICES:
        raise ValueError(f"device must be one of {DEVICES}, got {device!r}")
    results: dict[str, ProblemRun] = {}
    remaining = list(ids)
    while remaining and (stop_at is None or time.monotonic() < stop_at):
        results.update(_run_group(world_size, source, remaining, task, problem_timeout_s, grace_s,
                                  device, on_result, stop_at))
        remaining = [pid for pid in remaining if pid not in results]
    return results


def host_barrier() -> None:
    """Wait on the host until every rank gets here (a CUDA rank's gloo group; the default
    group elsewhere). Leaves the GPU's streams untouched."""
    import torch.distributed as dist

    dist.barrier(group=_host_group)


def host_group() -> Any:
    """The group host_barrier uses (None: the default group)."""
    return _host_group


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run_group(world_size: int, source: str, ids: list[str], task: Task, problem_timeout_s: float,
               grace_s: float, device: str = "cpu", on_result: Callable[[ProblemRun], None] | None = None,
               stop_at: float | None = None) -> dict[str, ProblemRun]:
    """One group of rank processes over `ids`; returns the runs it reached (a prefix)."""
    runs: dict[str, ProblemRun] = {}

    def decide(run: ProblemRun) -> None:
        runs[run.problem] = run
        if on_result is not None:
            on_result(run)

    reports: dict[str, dict[int, RankReport]] = {}
    exited: dict[int, int | None] = {}
    raised: dict[int, str] = {}
    idx = 0  # the problem the group is working on
    # start-up (spawn + torch import + gloo init, or CUDA contexts and NCCL communicators) gets
    # its own allowance on a loaded 2-core box
    deadline = time.monotonic() + problem_timeout_s + 60
    first_error_at: float | None = None
    with RankGroup(_rank_main, world_size, (_free_port(), source, ids, task, device)) as group:
        while idx < len(ids):
            pid = ids[idx]
            events = group.events(1.0)
            now = time.monotonic()
            if stop_at is not None and now > stop_at:
                return runs
            for ev in events:
                if isinstance(ev, RankExited):
                    exited[ev.rank] = ev.exitcode
                    continue
                msg = ev.value if isinstance(ev, RankSent) else None
                if isinstance(msg, _Outcome):
                    got = reports.setdefault(msg.problem, {})
                    got[ev.rank] = RankReport(msg.ok, msg.payload, msg.error, msg.seconds, len(got))
                    if not msg.ok and first_error_at is None:
                        first_error_at = now
                elif isinstance(msg, _StartFailed):
                    # the group never started (gloo init, loading): a new group would fail the
                    # same way, so every problem left gets this verdict
                    for left in ids[idx:]:
                        decide(ProblemRun(left, {}, f"rank {ev.rank}: {msg.text}"))
                    return runs
                elif isinstance(ev, RankFailed):  # past `except Exception` (KeyboardInterrupt)
                    raised[ev.rank] = ev.error
            got = reports.get(pid, {})
            if len(got) == world_size:
                decide(ProblemRun(pid, got, _first_failure(got) or ""))
                if not runs[pid].ok:
                    return runs  # ranks that failed have left the loop: start a fresh group
                idx += 1
                deadline = now + problem_timeout_s
                first_error_at = None
                continue
            # a rank gone without reporting this problem (crash, os._exit, sys.exit in a reference)
            dead = [r for r in sorted(exited) if r not in got]
            why = ""
            if dead and not events:
                why = f"rank {dead[0]} exited with code {exited[dead[0]]}" + (
                    f" ({raised[dead[0]]})" if dead[0] in raised else "")
            elif first_error_at is not None and now - first_error_at > grace_s:
                why = "other ranks hung after the failure"
            elif now > deadline:
                why = f"timed out after {problem_timeout_s:.0f} s"
            if why:
                first = _first_failure(got)
                decide(ProblemRun(pid, got, (f"{first}; " if first else "") + why))
                return runs
        return runs


def _first_failure(got: dict[int, RankReport]) -> str | None:
    fails = sorted((rep.arrival, r, rep.error) for r, rep in got.items() if not rep.ok)
    if not fails:
        return None
    _, r, t = fails[0]
    return f"rank {r}: {t if len(t) <= 400 else t[:400] + '...'}"


def _rank_main(rank: int, world_size: int, port: int, source: str, ids: list[str], task: Task,
               device: str = "cpu") -> None:
    global _host_group
    try:
        import warnings

        os.environ.update(MULTICAST_OFF)
        import torch
        import torch.distributed as dist

        # CPU ranks: 2 cores shared by up to 8 ranks, more threads only oversubscribe. CUDA
        # ranks share the node's cores for what runs on the host (truth.py at bench sizes).
        torch.set_num_threads(1 if device == "cpu" else max(1, (os.cpu_count() or 1) // world_size))
        # torch 2.13 deprecates all_gather_into_tensor/reduce_scatter_tensor; the GPU nodes'
        # torch 2.11 lacks the replacements, so references keep them.
        warnings.filterwarnings("ignore", category=FutureWarning)
        os.environ["MASTER_ADDR"] = "127.0.0.1"
        os.environ["MASTER_PORT"] = str(port)
        timeout = timedelta(seconds=60)
        if device == "cuda":
            # One process per GPU, every GPU visible (as the engine's judges run): symmetric
            # memory refuses ranks that see their GPUs as the same cuda:0.
            torch.cuda.set_device(rank)
            dist.init_process_group("cuda:nccl,cpu:gloo", rank=rank, world_size=world_size, timeout=timeout,
                                    device_id=torch.device("cuda", rank))
            _host_group = dist.new_group(backend="gloo", timeout=timeout)
        else:
            dist.init_process_group("gloo", rank=rank, world_size=world_size, timeout=timeout)
        from pkb_ray.problems.loader import load_problems

        problems = load_problems(source, ids).problems
    except Exception as exc:  # noqa: BLE001 - reported to the parent as data
        send(_StartFailed(f"start-up failed: {type(exc).__name__}: {exc}"))
        return
    for pid in ids:
        t0 = time.perf_counter()
        try:
            payload = task(problems[pid], rank, world_size)
            send(_Outcome(pid, True, payload, "", time.perf_counter() - t0))
        except Exception as exc:  # noqa: BLE001
            text = str(exc) if isinstance(exc, ProblemTooLarge) else describe(exc)
            send(_Outcome(pid, False, None, text, time.perf_counter() - t0))
            # A failure may leave this rank's collectives out of step with its peers' (it
            # skipped one they are blocked in); going on could pair the next problem's
            # collectives with this one's. Stop: the parent starts a fresh group.
            return
    dist.destroy_process_group()
