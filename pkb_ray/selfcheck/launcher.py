"""Start N rank processes, hear what each says, kill them all when time is up.

The one place the harness's tools start rank processes: `pkb problems check` and the
semantics tests (ranks.py), and the GPU scripts in scripts/. (Candidate code runs
elsewhere: the engine's judges start sandboxed workers through engine/launch/.)

- Spawn, never fork: a forked child inherits the parent's threads' locks and any CUDA or
  gloo state; spawned ranks import what they need afresh.
- One Pipe per rank, not a shared `mp.Queue`: a rank killed while it writes to a Queue
  can leave the Queue's shared lock held, and every other rank's next put blocks forever;
  a Pipe is private to one rank, so a killed rank only closes its own end (the parent reads
  that as the rank's exit).
- Typed events, in arrival order: `RankSent` (a value the rank sent with `send`),
  `RankReturned` (its target returned), `RankFailed` (its target raised; the text names the
  exception and the line), `RankExited` (the process ended: after everything it sent).

A rank's target is a module-level function `target(rank, world_size, *args)` (spawned
processes import it by name); it may call `send(value)` any number of times.
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.connection as mpc
import os
import time
import traceback
from dataclasses import dataclass, field
from typing import Any, Callable, Union

_channel: Any = None
"""This rank's end of its Pipe (in a rank process only)."""
_rank = -1


@dataclass(frozen=True)
class RankSent:
    rank: int
    value: Any


@dataclass(frozen=True)
class RankReturned:
    rank: int
    value: Any


@dataclass(frozen=True)
class RankFailed:
    rank: int
    error: str
    """`Type: message at file.py:line`."""
    traceback: str = ""


@dataclass(frozen=True)
class RankExited:
    rank: int
    exitcode: int | None
    """None when the process closed its end but has not been reaped yet."""


Event = Union[RankSent, RankReturned, RankFailed, RankExited]


def send(value: Any) -> None:
    """In a rank process: send `value` to the parent (a RankSent event there)."""
    if _channel is None:
        raise RuntimeError("send() is for rank processes started by pkb_ray.selfcheck.launcher")
    _channel.send(RankSent(_rank, value))


def describe(exc: BaseException) -> str:
    """`Type: message at file.py:line` (the innermost frame)."""
    tb = traceback.extract_tb(exc.__traceback__)
    where = f" at {os.path.basename(tb[-1].filename)}:{tb[-1].lineno}" if tb else ""
    return f"{type(exc).__name__}: {exc}{where}"


def _bootstrap(conn: mpc.Connection, rank: int, world_size: int, target: Callable, args: tuple) -> None:
    global _channel, _rank
    _channel, _rank = conn, rank
    try:
        value = target(rank, world_size, *args)
        conn.send(RankReturned(rank, value))
    except SystemExit:
        raise  # sys.exit(n) in the target: the exit code (RankExited) says it as it was
    except BaseException as exc:  # noqa: BLE001 - reported to the parent as data
        try:
            conn.send(RankFailed(rank, describe(exc), traceback.format_exc()[-4000:]))
        except (OSError, ValueError):
            pass  # the parent has gone or the value did not pickle: the exit code says enough
        raise SystemExit(1) from None
    finally:
        conn.close()


class RankGroup:
    """`world_size` spawned rank processes; `with RankGroup(...) as g:` kills them on exit."""

    def __init__(self, target: Callable, world_size: int, args: tuple = (), *, daemon: bool = True):
        ctx = multiprocessing.get_context("spawn")
        self.world_size = world_size
        self._conns: dict[int, mpc.Connection] = {}
        self._child_ends: list[mpc.Connection] = []
        self._procs = []
        for rank in range(world_size):
            parent_end, child_end = ctx.Pipe(duplex=False)
            self._conns[rank] = parent_end
            self._child_ends.append(child_end)
            self._procs.append(ctx.Process(target=_bootstrap, daemon=daemon, name=f"rank{rank}",
                                           args=(child_end, rank, world_size, target, args)))
        self._started = False

    def start(self) -> RankGroup:
        for p in self._procs:
            p.start()
        # The parent's copies of the child ends must go: while one is open, a rank's exit
        # never shows as end-of-file on its pipe.
        for c in self._child_ends:
            c.close()
        self._started = True
        return self

    def __enter__(self) -> RankGroup:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.kill()

    def exitcode(self, rank: int) -> int | None:
        return self._procs[rank].exitcode

    def alive(self) -> list[int]:
        return [r for r, p in enumerate(self._procs) if p.is_alive()]

    def events(self, timeout_s: float) -> list[Event]:
        """What the ranks said within `timeout_s` (an empty list: nothing yet). Returns as
        soon as something arrives; a rank whose pipe closed yields RankExited once."""
        if not self._conns:
            return []
        ready = mpc.wait(list(self._conns.values()), timeout=max(0.0, timeout_s))
        out: list[Event] = []
        by_conn = {id(c): r for r, c in self._conns.items()}
        for conn in ready:
            rank = by_conn[id(conn)]
            try:
                # drain: a rank may have sent several values before we looked
                while True:
                    out.append(conn.recv())
                    if not conn.poll():
                        break
            except (EOFError, OSError):
                conn.close()
                del self._conns[rank]
                proc = self._procs[rank]
                proc.join(timeout=1.0)
                out.append(RankExited(rank, proc.exitcode))
        return out

    def kill(self) -> None:
        """Kill every rank still running and reap them all."""
        if not self._started:
            return
        for p in self._procs:
            if p.is_alive():
                p.kill()
        for p in self._procs:
            p.join(timeout=10)
        for c in self._conns.values():
            c.close()
        self._conns.clear()


@dataclass
class GroupResult:
    """Every rank's outcome of one `run_ranks` call."""

    world_size: int
    returned: dict[int, Any] = field(default_factory=dict)
    sent: list[RankSent] = field(default_factory=list)
    failures: list[RankFailed] = field(default_factory=list)
    """In order of arrival: the first is usually the cause, later ones its peers' errors."""
    exitcodes: dict[int, int | None] = field(default_factory=dict)
    killed: list[int] = field(default_factory=list)
    """Ranks still running at the timeout (killed)."""
    wall_s: float = 0.0

    @property
    def timed_out(self) -> bool:
        return bool(self.killed)

    @property
    def ok(self) -> bool:
        return len(self.returned) == self.world_size and not self.failures and not self.killed

    def why(self) -> str:
        """Which rank failed and how, or '' when every rank returned."""
        if self.failures:
            f = self.failures[0]
            return f"rank {f.rank}: {f.error}"
        gone = [r for r in range(self.world_size) if r not in self.returned and r not in self.killed]
        if gone:
            return f"rank {gone[0]} exited with code {self.exitcodes.get(gone[0])} without returning"
        if self.killed:
            return f"timed out after {self.wall_s:.0f} s: rank(s) {self.killed} still running (killed)"
        return ""


def run_ranks(target: Callable, world_size: int, args: tuple = (), *, timeout_s: float,
              on_event: Callable[[Event], None] | None = None) -> GroupResult:
    """Run `target(rank, world_size, *args)` on `world_size` spawned ranks until each has
    returned or exited, or `timeout_s` has passed (then every rank left is killed)."""
    result = GroupResult(world_size)
    t0 = time.monotonic()
    with RankGroup(target, world_size, args) as group:
        while len(result.exitcodes) < world_size:
            left = timeout_s - (time.monotonic() - t0)
            if left <= 0:
                result.killed = [r for r in range(world_size) if r not in result.exitcodes]
                break
            for ev in group.events(min(left, 1.0)):
                if on_event is not None:
                    on_event(ev)
                if isinstance(ev, RankSent):
                    result.sent.append(ev)
                elif isinstance(ev, RankReturned):
                    result.returned[ev.rank] = ev.value
                elif isinstance(ev, RankFailed):
                    result.failures.append(ev)
                elif isinstance(ev, RankExited):
                    result.exitcodes[ev.rank] = ev.exitcode
    for r in range(world_size):
        result.exitcodes.setdefault(r, group.exitcode(r))
    result.wall_s = time.monotonic() - t0
    return result
