"""`pkb problems check`: run every reference on CPU with gloo at the small size, in real processes.

World-size rank processes start ONCE and loop over all problems (a process start with torch
import and gloo init costs ~2-3 s; 33 problems x that would dominate). A rank that fails
a problem stops (its collectives may now be out of step with its peers'); the others may hang
in a collective it skipped. The parent notices (all ranks reported, or one reported an error
and the rest stay silent for `grace_s`, or a problem overruns its time), kills the group,
marks that problem failed and starts a fresh group for the problems after it.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import queue as queue_mod
import socket
import time
import traceback
from dataclasses import dataclass
from datetime import timedelta

SEED_A = 1234
SEED_B = 4321
SIZE = "small"


@dataclass
class CheckResult:
    """The verdict on one problem at one world size."""

    problem: str
    status: str
    """ok | FAIL | skip."""
    message: str = ""
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.status != "FAIL"


def check_problems(world_size: int, source: str = "builtin", ids: list[str] | None = None,
                   problem_timeout_s: float = 120.0, grace_s: float = 10.0) -> list[CheckResult]:
    """Check the references of `source` (or `ids`) at `world_size`; one CheckResult per problem."""
    from pkb_ray.problems.loader import load_problems

    loaded = load_problems(source, ids)
    results: dict[str, CheckResult] = {}
    for err in loaded.errors:
        results[err.problem] = CheckResult(err.problem, "FAIL", f"load error: {err}")
    runnable = []
    for pid, p in loaded.problems.items():
        if world_size in p.spec.world_sizes:
            runnable.append(pid)
        else:
            results[pid] = CheckResult(pid, "skip", f"world size {world_size} not in {list(p.spec.world_sizes)}")
    remaining = runnable
    while remaining:
        done = _run_group(world_size, source, remaining, problem_timeout_s, grace_s)
        results.update(done)
        remaining = [pid for pid in remaining if pid not in results]
    order = [e.problem for e in loaded.errors] + list(loaded.problems)
    return [results[pid] for pid in order]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run_group(world_size: int, source: str, ids: list[str], problem_timeout_s: float,
               grace_s: float) -> dict[str, CheckResult]:
    """Run one group of rank processes over `ids`; returns the verdicts it reached (a prefix)."""
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    port = _free_port()
    procs = [ctx.Process(target=_rank_main, args=(r, world_size, port, source, ids, q), daemon=True)
             for r in range(world_size)]
    for p in procs:
        p.start()
    verdicts: dict[str, CheckResult] = {}
    reports: dict[str, dict[int, tuple[str, str, float, int]]] = {}
    idx = 0  # the problem the group is working on
    # start-up (spawn + torch import + gloo init) gets its own allowance on a loaded 2-core box
    deadline = time.monotonic() + problem_timeout_s + 60
    first_error_at: float | None = None
    try:
        while idx < len(ids):
            pid = ids[idx]
            try:
                msg = q.get(timeout=1.0)
            except queue_mod.Empty:
                msg = None
            now = time.monotonic()
            if msg is not None:
                kind = msg[0]
                if kind == "result":
                    _, mpid, rank, status, text, secs = msg
                    # arrival order: the first failure is the cause, later ones are often
                    # peers seeing "connection closed" after the failing rank stopped
                    reports.setdefault(mpid, {})[rank] = (status, text, secs, len(reports.get(mpid, {})))
                    if status == "FAIL" and first_error_at is None:
                        first_error_at = now
                elif kind == "fatal":
                    # the group never started (gloo init, loading): a new group would fail the
                    # same way, so every problem left gets this verdict
                    _, rank, text = msg
                    for left in ids[idx:]:
                        verdicts[left] = CheckResult(left, "FAIL", f"rank {rank}: {text}")
                    return verdicts
            got = reports.get(pid, {})
            if len(got) == world_size:
                verdicts[pid] = _combine(pid, got)
                if not verdicts[pid].ok:
                    return verdicts  # ranks that failed have left the loop: start a fresh group
                idx += 1
                deadline = now + problem_timeout_s
                first_error_at = None
                continue
            # a rank gone without reporting this problem (crash, os._exit, sys.exit in a reference)
            dead = [r for r, p in enumerate(procs) if p.exitcode is not None and r not in got]
            if dead and msg is None:
                verdicts[pid] = _partial(pid, got, f"rank {dead[0]} exited with code {procs[dead[0]].exitcode}")
                return verdicts
            if first_error_at is not None and now - first_error_at > grace_s:
                verdicts[pid] = _partial(pid, got, "other ranks hung after the failure")
                return verdicts
            if now > deadline:
                verdicts[pid] = _partial(pid, got, f"timed out after {problem_timeout_s:.0f} s")
                return verdicts
        return verdicts
    finally:
        for p in procs:
            if p.is_alive():
                p.kill()
        for p in procs:
            p.join(timeout=10)
        q.close()


def _first_failure(got: dict[int, tuple[str, str, float, int]]) -> str | None:
    fails = sorted((seq, r, t) for r, (st, t, _, seq) in got.items() if st == "FAIL")
    if not fails:
        return None
    _, r, t = fails[0]
    return f"rank {r}: {t if len(t) <= 400 else t[:400] + '...'}"


def _combine(pid: str, got: dict[int, tuple[str, str, float, int]]) -> CheckResult:
    secs = max(v[2] for v in got.values())
    first = _first_failure(got)
    if first:
        return CheckResult(pid, "FAIL", first, secs)
    return CheckResult(pid, "ok", "", secs)


def _partial(pid: str, got: dict[int, tuple[str, str, float, int]], why: str) -> CheckResult:
    first = _first_failure(got)
    return CheckResult(pid, "FAIL", (f"{first}; " if first else "") + why)


def _rank_main(rank: int, world_size: int, port: int, source: str, ids: list[str], q) -> None:
    try:
        import warnings

        import torch
        import torch.distributed as dist

        # 2 cores shared by up to 8 ranks: more threads only oversubscribe.
        torch.set_num_threads(1)
        # torch 2.13 deprecates all_gather_into_tensor/reduce_scatter_tensor; the GPU nodes'
        # torch 2.11 lacks the replacements, so references keep them.
        warnings.filterwarnings("ignore", category=FutureWarning)
        os.environ["MASTER_ADDR"] = "127.0.0.1"
        os.environ["MASTER_PORT"] = str(port)
        dist.init_process_group("gloo", rank=rank, world_size=world_size, timeout=timedelta(seconds=60))
        from pkb_ray.problems.loader import load_problems

        problems = load_problems(source, ids).problems
    except Exception as exc:  # noqa: BLE001 - reported to the parent as data
        q.put(("fatal", rank, f"start-up failed: {type(exc).__name__}: {exc}"))
        return
    for pid in ids:
        t0 = time.perf_counter()
        try:
            problem = problems[pid]
            check_one(problem, rank, world_size)
            q.put(("result", pid, rank, "ok", "", time.perf_counter() - t0))
        except Exception as exc:  # noqa: BLE001
            tb = traceback.extract_tb(exc.__traceback__)
            where = f" at {os.path.basename(tb[-1].filename)}:{tb[-1].lineno}" if tb else ""
            q.put(("result", pid, rank, "FAIL", f"{type(exc).__name__}: {exc}{where}",
                   time.perf_counter() - t0))
            # A failure may leave this rank's collectives out of step with its peers' (it
            # skipped one they are blocked in); going on could pair the next problem's
            # collectives with this one's. Stop: the parent starts a fresh group.
            return
    dist.destroy_process_group()


class CheckFailure(AssertionError):
    pass


def check_one(problem, rank: int, world_size: int) -> None:
    """The per-rank checks of one problem; raises CheckFailure with the reason."""
    import torch

    a = problem.make_inputs(rank, world_size, SEED_A, SIZE)
    b = problem.make_inputs(rank, world_size, SEED_A, SIZE)
    c = problem.make_inputs(rank, world_size, SEED_B, SIZE)
    if not a:
        raise CheckFailure("make_inputs returned no tensors")
    for i, t in enumerate(a):
        if not isinstance(t, torch.Tensor):
            raise CheckFailure(f"input {i} is a {type(t).__name__}, not a tensor")
    if not all(torch.equal(x, y) for x, y in zip(a, b)) or len(a) != len(b):
        raise CheckFailure(f"seed {SEED_A} gave different inputs on two calls")
    if all(x.shape == y.shape and torch.equal(x, y) for x, y in zip(a, c)):
        raise CheckFailure(f"seeds {SEED_A} and {SEED_B} gave identical inputs")
    for i, t in enumerate(a):
        if t.numel() > 1 and t.dtype != torch.bool and bool((t == t.flatten()[0]).all()):
            raise CheckFailure(f"input {i} is constant ({t.flatten()[0].item()!r})")
    want = getattr(torch, problem.spec.sizes[SIZE]["dtype"])
    floats = [t for t in a if t.is_floating_point()]
    if floats and floats[0].dtype != want:
        raise CheckFailure(f"first floating input is {floats[0].dtype}, metadata says {want}")
    out1 = _as_tuple(problem.solution(*[t.clone() for t in a]))
    out2 = _as_tuple(problem.solution(*a))
    if not all(torch.equal(x, y) for x, y in zip(a, b)):
        raise CheckFailure("the reference modified its inputs")
    for i, t in enumerate(out1):
        if not isinstance(t, torch.Tensor):
            raise CheckFailure(f"output {i} is a {type(t).__name__}, not a tensor")
        if (t.is_floating_point() or t.is_complex()) and not bool(torch.isfinite(t).all()):
            raise CheckFailure(f"output {i} has non-finite values")
        if t.is_floating_point() and t.dtype not in (want, torch.float32):
            raise CheckFailure(f"output {i} is {t.dtype}; expected {want} (or float32 statistics)")
    if len(out1) != len(out2) or not all(x.shape == y.shape and torch.equal(x, y)
                                         for x, y in zip(out1, out2)):
        raise CheckFailure("the reference is not deterministic: two calls on the same inputs differ")


def _as_tuple(out):
    return tuple(out) if isinstance(out, (tuple, list)) else (out,)
