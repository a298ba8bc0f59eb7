"""Run one evaluation as `world_size` fresh rank processes and classify how it ended.

Ranks are forked from a multiprocessing forkserver that has already imported torch (two
fresh ranks with process-group init cost ~5 s on the H200 node vs 11-12 s for torchrun,
DESIGN.md). The forkserver is exec'd with the allow-listed environment, so neither it nor
its children carry credentials, not even in /proc/<pid>/environ; each rank then replaces
its environment with the one the evaluation gives it before anything reads CUDA variables.

Each rank reports its phase through its own pipe (a pipe per rank: a queue's shared lock
could be left held by a rank killed mid-write). The parent enforces a wall-clock limit per
phase, and on a failure, a death or a hang it SIGKILLs every rank's process group, reaps
the ranks and classifies the end:
  a rank-reported forbidden_api / compile_error
  > a rank that died without reporting (signal or exit: runtime_error, or cuda_fault when
    its log shows a CUDA error)
  > another rank-reported failure (cuda_fault, runtime_error, nan, incorrect)
  > a harness error reported by a rank (often a peer's death seen through gloo)
  > timeout (with the phase and the rank that did not finish it).
The parent process never runs candidate code and survives all of this.
"""

from __future__ import annotations

import contextlib
import faulthandler
import multiprocessing as mp
import multiprocessing.connection as mpc
import multiprocessing.forkserver as mp_forkserver
import multiprocessing.spawn as mp_spawn
import multiprocessing.util as mp_util
import os
import re
import signal
import subprocess
import sys
import threading
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from pkb_ray.engine.env import rank_env
from pkb_ray.records import FailureClass

# Imported once by the forkserver, so every rank starts with them loaded.
PRELOAD = ["torch", "torch.distributed", "pkb_ray.engine.rank_main"]

_CUDA_ERROR = re.compile(
    r"illegal memory access|illegal address|CUDA error|CUDA_ERROR|cudaError|device-side assert"
    r"|unspecified launch failure|misaligned address|illegal instruction|Xid", re.I)

# Which reported failure explains an evaluation best, when several ranks report.
_PRIORITY = [FailureClass.FORBIDDEN_API, FailureClass.COMPILE_ERROR, FailureClass.CUDA_FAULT,
             FailureClass.RUNTIME_ERROR, FailureClass.NAN, FailureClass.INCORRECT,
             FailureClass.TIMEOUT]

_lock = threading.Lock()
_forkserver_popen: subprocess.Popen | None = None
GRACE_S = 0.5
"""After the first failure, how long to keep listening for the root cause on other ranks."""
LOG_TAIL_CHARS = 6000


def is_cuda_error(text: str) -> bool:
    return bool(_CUDA_ERROR.search(text or ""))


@dataclass
class Failure:
    failure: FailureClass
    message: str
    rank: int | None = None
    trial: int | None = None
    max_abs_error: float | None = None
    phase: str = ""


@dataclass
class LaunchOutcome:
    ok: bool
    failure: Failure | None = None
    results: dict[int, dict[str, Any]] = field(default_factory=dict)
    """The `result` payload each rank sent (success path)."""
    events: list[tuple[float, int, str, Any]] = field(default_factory=list)
    exit_codes: dict[int, int | None] = field(default_factory=dict)
    log: str = ""
    wall_s: float = 0.0


# --------------------------------------------------------------------------- forkserver

def _clean_spawnv_passfds(path: str, args: list[str], passfds: list[int]) -> int:
    """multiprocessing.util.spawnv_passfds, but exec'd with the allow-listed environment."""
    global _forkserver_popen
    _forkserver_popen = subprocess.Popen(args, executable=path, pass_fds=passfds,
                                         env=rank_env(), close_fds=True)
    return _forkserver_popen.pid


def _preparation_without_main(name: str) -> dict[str, Any]:
    """The child's preparation data minus the parent's __main__: a Ray worker's or pytest's
    main module has nothing to do in a rank, and re-importing it costs seconds."""
    data = _orig_get_preparation_data(name)
    for k in ("init_main_from_name", "init_main_from_path", "main_path"):
        data.pop(k, None)
    return data


_orig_get_preparation_data = mp_spawn.get_preparation_data


@contextlib.contextmanager
def _patched_multiprocessing():
    with _lock:
        saved_spawn, saved_prep = mp_util.spawnv_passfds, mp_spawn.get_preparation_data
        mp_util.spawnv_passfds = _clean_spawnv_passfds
        mp_spawn.get_preparation_data = _preparation_without_main
        try:
            yield
        finally:
            mp_util.spawnv_passfds, mp_spawn.get_preparation_data = saved_spawn, saved_prep


def _context() -> mp.context.BaseContext:
    ctx = mp.get_context("forkserver")
    ctx.set_forkserver_preload(PRELOAD)
    return ctx


def _noop() -> None:
    pass


def _reset_forkserver() -> None:
    """Stop the current forkserver (waiting for it) so the next start makes a new one.

    multiprocessing asks waitpid(WNOHANG) whether its forkserver lives. One that a candidate
    killed can still be exiting (torch's threads and memory take a while on a loaded
    machine: seen on 2 cores), so it counts as alive while its socket already refuses
    connections. Closing its alive fd stops a live server too, so the wait cannot hang.
    Called inside _patched_multiprocessing(), which already holds _lock (not re-entrant)."""
    fs = mp_forkserver._forkserver
    try:
        fs._stop_unlocked()  # closes the alive fd, waits for the process, unlinks the socket
    except OSError:
        fs._forkserver_pid = fs._forkserver_address = fs._forkserver_alive_fd = None


def ensure_forkserver() -> None:
    """Start the forkserver now and wait for its preload (the torch import, 2-5 s), e.g. at
    actor start, so the first evaluation does not pay it."""
    ctx = _context()
    with _patched_multiprocessing():
        mp_forkserver.ensure_running()
        p = ctx.Process(target=_noop, name="pkb-forkserver-warmup")
        p.start()
    p.join(120)


# --------------------------------------------------------------------------- the rank side

class RankChannel:
    """What a rank uses to talk to the parent."""

    def __init__(self, conn: mpc.Connection, rank: int) -> None:
        self._conn = conn
        self.rank = rank

    def phase(self, name: str) -> None:
        self._conn.send(("phase", name))

    def fail(self, failure: FailureClass, message: str, *, trial: int | None = None,
             max_abs_error: float | None = None, log: str = "") -> None:
        self._conn.send(("fail", {"failure": failure.value, "message": message, "trial": trial,
                                  "max_abs_error": max_abs_error, "log": log}))

    def result(self, payload: dict[str, Any]) -> None:
        self._conn.send(("result", payload))


def _set_pdeathsig() -> None:
    """Die with the forkserver (our parent): no orphaned rank outlives its evaluator."""
    try:
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _bootstrap(target: Callable[..., None], rank: int, world_size: int, job: dict[str, Any],
               conn: mpc.Connection, env: dict[str, str], workdir: str) -> None:
    """First code in a rank: isolate, redirect output, set the environment, run `target`."""
    os.setpgrp()  # own process group: the parent kills it with everything it spawned
    _set_pdeathsig()
    rank_dir = Path(workdir) / f"rank{rank}"
    rank_dir.mkdir(parents=True, exist_ok=True)
    fd = os.open(str(Path(workdir) / f"rank{rank}.log"), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    faulthandler.enable()  # a segfault leaves its Python stack in the rank's log
    os.environ.clear()
    os.environ.update(env)
    os.chdir(rank_dir)
    chan = RankChannel(conn, rank)
    code = 0
    try:
        chan.phase("start")
        target(rank, world_size, job, chan)
    except BaseException:  # noqa: BLE001 - everything is reported, nothing escapes
        tb = traceback.format_exc()
        sys.stderr.write(tb)
        try:
            chan.fail(FailureClass.HARNESS_ERROR, tb.strip().splitlines()[-1][:500], log=tb)
        except OSError:
            pass
        code = 1
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        # Skip interpreter teardown: process-group destructors can block on dead peers.
        os._exit(code)


# --------------------------------------------------------------------------- the parent side

def _kill_group(procs: list[Any]) -> None:
    for p in procs:
        if p.pid is None:
            continue
        for kill in (lambda: os.killpg(p.pid, signal.SIGKILL), lambda: os.kill(p.pid, signal.SIGKILL)):
            try:
                kill()
            except (ProcessLookupError, PermissionError, OSError):
                continue
    for p in procs:
        p.join(10)


def _log_tail(workdir: str, world_size: int) -> dict[int, str]:
    out = {}
    for r in range(world_size):
        p = Path(workdir) / f"rank{r}.log"
        try:
            with open(p, "rb") as f:  # only the tail: a candidate may print gigabytes
                f.seek(0, os.SEEK_END)
                f.seek(max(0, f.tell() - 4 * LOG_TAIL_CHARS))
                text = f.read().decode(errors="replace")
        except OSError:
            text = ""
        out[r] = text[-LOG_TAIL_CHARS:]
    return out


def launch(target: Callable[..., None], world_size: int, job: dict[str, Any],
           envs: list[dict[str, str]], workdir: str, phase_timeouts_s: dict[str, float]) -> LaunchOutcome:
    """Run `target(rank, world_size, job, channel)` in `world_size` fresh processes.

    phase_timeouts_s maps a phase kind (the part of a phase name before ":"; a "wait:"
    prefix is ignored) to its wall-clock limit; "start" must be present."""
    t0 = time.monotonic()
    ctx = _context()
    procs, conns = [], []
    with _patched_multiprocessing():
        for attempt in (1, 2):
            try:
                for r in range(world_size):
                    recv_end, send_end = ctx.Pipe(duplex=False)
                    conns.append(recv_end)
                    p = ctx.Process(target=_bootstrap, name=f"pkb-rank{r}",
                                    args=(target, r, world_size, job, send_end, envs[r], workdir))
                    p.daemon = False
                    p.start()
                    send_end.close()
                    procs.append(p)
                break
            except BaseException as exc:
                _kill_group(procs)  # no half-started group left waiting for its peers
                for c in conns:
                    c.close()
                if attempt == 2 or not isinstance(exc, ConnectionRefusedError):
                    raise
                procs, conns = [], []
                _reset_forkserver()  # the last candidate killed it; start a fresh one

    now = time.monotonic()
    phase = {r: "start" for r in range(world_size)}
    phase_t0 = {r: now for r in range(world_size)}
    results: dict[int, dict] = {}
    reported: list[tuple[float, int, dict]] = []
    dead: dict[int, int] = {}
    open_conns = {r: c for r, c in enumerate(conns)}
    events: list[tuple[float, int, str, Any]] = []
    first_failure_t: float | None = None
    timed_out: Failure | None = None

    def limit(name: str) -> float:
        kind = name[5:] if name.startswith("wait:") else name
        kind = kind.split(":", 1)[0]
        return phase_timeouts_s.get(kind, phase_timeouts_s["start"])

    def drain(r: int) -> None:
        c = open_conns.get(r)
        while c is not None:
            try:
                if not c.poll():
                    return
                kind, data = c.recv()
            except (EOFError, OSError):
                open_conns.pop(r, None)
                return
            ts = time.monotonic()
            events.append((ts - t0, r, kind, data if kind != "result" else "..."))
            if kind == "phase":
                phase[r], phase_t0[r] = data, ts
            elif kind == "fail":
                reported.append((ts, r, data))
            elif kind == "result":
                results[r] = data

    while True:
        waitables = list(open_conns.values()) + [p.sentinel for r, p in enumerate(procs) if r not in dead]
        mpc.wait(waitables, timeout=0.05 if first_failure_t else 0.25)
        for r in list(open_conns):
            drain(r)
        for r, p in enumerate(procs):
            if r not in dead and p.exitcode is not None:
                drain(r)
                dead[r] = p.exitcode
        now = time.monotonic()
        bad_exit = [r for r, code in dead.items() if r not in results or code != 0]
        if (reported or bad_exit) and first_failure_t is None:
            first_failure_t = now
        if first_failure_t is not None and (now - first_failure_t >= GRACE_S or len(dead) == world_size):
            break
        if len(results) == world_size and len(dead) == world_size:
            break
        if first_failure_t is None:
            late = [r for r in range(world_size)
                    if r not in results and r not in dead and now - phase_t0[r] > limit(phase[r])]
            if late:
                # The rank that did not finish its own step: not one waiting on the others.
                busy = [r for r in range(world_size) if r not in results and r not in dead
                        and not phase[r].startswith("wait:")]
                culprit = min(busy or late, key=lambda r: (phase_t0[r], r))
                timed_out = Failure(FailureClass.TIMEOUT,
                                    f"rank {culprit} did not finish phase {phase[culprit]!r} within "
                                    f"{limit(phase[culprit]):.0f} s",
                                    rank=culprit, trial=_trial_of(phase[culprit]), phase=phase[culprit])
                break

    _kill_group(procs)
    for r, p in enumerate(procs):
        dead.setdefault(r, p.exitcode)
    for c in conns:
        c.close()
    logs = _log_tail(workdir, world_size)
    log = "\n".join(f"==== rank {r} (exit {dead.get(r)}, phase {phase[r]}) ====\n{logs[r]}"
                    for r in range(world_size))
    outcome = LaunchOutcome(ok=False, results=results, events=events, exit_codes=dict(dead),
                            log=log, wall_s=time.monotonic() - t0)
    if timed_out is None and not reported and len(results) == world_size and \
            all(dead.get(r) == 0 for r in range(world_size)):
        outcome.ok = True
        return outcome
    outcome.failure = timed_out or _classify(reported, dead, results, phase, logs)
    return outcome


def _trial_of(phase_name: str) -> int | None:
    m = re.search(r"trial:(\d+)", phase_name)
    return int(m.group(1)) if m else None


def _classify(reported: list[tuple[float, int, dict]], dead: dict[int, int | None],
              results: dict[int, dict], phase: dict[int, str], logs: dict[int, str]) -> Failure:
    candidate_fails = []
    harness_fails = []
    for ts, r, d in reported:
        fc = FailureClass(d["failure"])
        f = Failure(fc, d["message"], rank=r, trial=d.get("trial"),
                    max_abs_error=d.get("max_abs_error"), phase=phase[r])
        (harness_fails if fc == FailureClass.HARNESS_ERROR else candidate_fails).append(f)

    def best(fails: list[Failure]) -> Failure:
        return min(fails, key=lambda f: (
            _PRIORITY.index(f.failure) if f.failure in _PRIORITY else 99,
            f.trial if f.trial is not None else 1 << 30, f.rank))

    # A forbidden call or a compile error explains everything that follows it.
    severe = [f for f in candidate_fails if f.failure in (FailureClass.FORBIDDEN_API, FailureClass.COMPILE_ERROR)]
    if severe:
        return best(severe)
    reporters = {r for _, r, _ in reported}
    died = [r for r, code in sorted(dead.items())
            if code is not None and r not in results and r not in reporters]
    if died:
        # A rank that died mid-call leaves its peers with partial data: their wrong output or
        # gloo error is a consequence, the death is the cause.
        r = min(died, key=lambda r: (0 if (dead[r] or 0) < 0 else 1, r))
        code = dead[r]
        if code is not None and code < 0:
            try:
                how = f"killed by signal {signal.Signals(-code).name}"
            except ValueError:
                how = f"killed by signal {-code}"
        else:
            how = f"exited with code {code} without reporting"
        fc = FailureClass.CUDA_FAULT if is_cuda_error(logs.get(r, "")) else FailureClass.RUNTIME_ERROR
        return Failure(fc, f"rank {r} {how} in phase {phase[r]!r}", rank=r,
                       trial=_trial_of(phase[r]), phase=phase[r])
    if candidate_fails:
        return best(candidate_fails)
    if harness_fails:
        f = harness_fails[0]
        if is_cuda_error(f.message) or is_cuda_error(logs.get(f.rank or 0, "")):
            return Failure(FailureClass.CUDA_FAULT, f.message, rank=f.rank, trial=f.trial, phase=f.phase)
        return f
    return Failure(FailureClass.HARNESS_ERROR, "ranks ended without a result or a failure")
