"""The reference's own error against truth.py, per seed, in units of the problem's tolerance.

A candidate is held to |out - reference| <= atol + rtol |reference| (the judge's comparator).
An honest candidate rounds differently from the reference, by about as much as the
reference differs from the exact math; so the reference's error against the exact math,
over the tolerance, says whether the tolerance leaves room for honest rounding (well under
1) without being so loose that it stops telling right from wrong (far under 1 with a
nonzero error).

The truth runs on the rank's own device, from every rank's inputs regenerated from the
seed (make_inputs is a function of rank, world size, seed and size), so nothing moves
between processes. It runs twice: on the inputs as they are (the truth's own precision:
must agree within the tolerance) and upcast to float64 (near enough the exact math). It is
local code: any failure, a time limit or running out of memory is a note, never an
exception (the collectives of the next call must still pair up).
"""

from __future__ import annotations

import contextlib
import signal
import threading
import time
from typing import Any, Iterator

import torch

from pkb_ray.problems import args as tree
from pkb_ray.selfcheck.audit.records import SeedError

_FP8 = {getattr(torch, n) for n in ("float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz")
        if hasattr(torch, n)}


class TruthTimeout(Exception):
    pass


@contextlib.contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Raise TruthTimeout in this (main) thread after `seconds` (between Python bytecodes:
    a running kernel finishes first). No limit off the main thread."""
    if seconds <= 0 or threading.current_thread() is not threading.main_thread():
        yield
        return

    def fire(signum, frame):
        raise TruthTimeout(f"over {seconds:.0f} s")

    old = signal.signal(signal.SIGALRM, fire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def upcast(x: Any) -> Any:
    """Floating tensors (fp8 payloads aside: their bytes are the data) as float64, complex as
    complex128; everything else as it is."""
    if isinstance(x, torch.Tensor):
        if x.is_floating_point() and x.dtype not in _FP8:
            return x.to(torch.float64)
        if x.is_complex():
            return x.to(torch.complex128)
        return x
    if isinstance(x, dict):
        return {k: upcast(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)) and type(x) in (list, tuple):
        return type(x)(upcast(v) for v in x)
    return x


def error_ratio(got: Any, want: Any, atol: float, rtol: float) -> tuple[float, float, int]:
    """(max |got - want| / (atol + rtol |want|) over floating elements, max |got - want|,
    integer elements that differ). Raises ValueError when the structures differ."""
    g, w = list(tree.tensors(_as_tree(got))), list(tree.tensors(_as_tree(want)))
    if [p for p, _ in g] != [p for p, _ in w]:
        raise ValueError(f"output structure differs from truth.py's ({len(g)} vs {len(w)} tensors)")
    worst = worst_abs = 0.0
    ints = 0
    for (path, a), (_, b) in zip(g, w):
        if a.shape != b.shape:
            raise ValueError(f"output{path}: shape {tuple(a.shape)} vs truth.py's {tuple(b.shape)}")
        b = b.to(a.device)
        if a.is_floating_point() or a.is_complex() or b.is_floating_point() or b.is_complex():
            a64, b64 = _f64(a), _f64(b)
            diff = (a64 - b64).abs()
            bound = atol + rtol * b64.abs()
            if diff.numel():
                # a zero bound (atol 0 at a zero) passes only an exact match; NaN never passes
                ratio = torch.where(bound > 0, diff / bound.clamp_min(1e-300),
                                    torch.where(diff > 0, float("inf"), 0.0))
                inf = float("inf")
                worst = max(worst, float(torch.nan_to_num(ratio, nan=inf, posinf=inf).max()))
                worst_abs = max(worst_abs, float(torch.nan_to_num(diff, nan=inf, posinf=inf).max()))
        else:
            ints += int((a != b).sum())
    return worst, worst_abs, ints


def _as_tree(x: Any) -> Any:
    return x if isinstance(x, (tuple, list, dict)) else (x,)


def _f64(t: torch.Tensor) -> torch.Tensor:
    if t.is_complex():
        return torch.view_as_real(t.to(torch.complex128))
    return t.to(torch.float64)


def seed_errors(problem, truth, rank: int, world_size: int, size: str, device: str,
                outputs: dict[int, Any], limit_s: float) -> tuple[SeedError, ...]:
    """One SeedError per seed of `outputs` (seed -> this rank's output of the reference)."""
    if truth is None:
        return tuple(SeedError(s, note="no truth.py") for s in outputs)
    atol, rtol = problem.spec.atol, problem.spec.rtol
    found = []
    t0 = time.monotonic()
    for seed, got in outputs.items():
        left = limit_s - (time.monotonic() - t0)
        if left <= 0:
            found.append(SeedError(seed, note=f"truth.py out of time ({limit_s:.0f} s for all seeds)"))
            continue
        found.append(_one_seed(problem, truth, rank, world_size, size, device, seed, got, atol, rtol, left))
    return tuple(found)


def _one_seed(problem, truth, rank, world_size, size, device, seed, got, atol, rtol, left_s) -> SeedError:
    """float64 first (what the tolerance is judged by; skipped where the tolerance is zero and
    the problem's own precision defines the result), then truth.py's own precision."""
    notes: list[str] = []
    native = f64 = max_abs = None
    ints = 0
    try:
        with time_limit(left_s):
            inputs = [problem.make_inputs(r, world_size, seed, size, device) for r in range(world_size)]
            if atol or rtol:
                want64, inputs = _expected(truth, inputs, world_size, rank, upcast, notes)
                if want64 is not None:
                    f64, max_abs, ints = error_ratio(got, want64, atol, rtol)
                    del want64
            want, inputs = _expected(truth, inputs, world_size, rank, lambda x: x, notes)
            if want is not None:
                native, _, ints = error_ratio(got, want, atol, rtol)
                del want
            del inputs
    except TruthTimeout as exc:
        notes.append(f"truth.py {exc}")
    except torch.cuda.OutOfMemoryError:
        notes.append("truth.py ran out of GPU memory")
    except Exception as exc:  # noqa: BLE001 - a problem file may raise anything
        notes.append(f"truth.py: {type(exc).__name__}: {str(exc)[:160]}")
    finally:
        if torch.cuda.is_available() and torch.cuda.is_initialized():
            torch.cuda.empty_cache()
    return SeedError(seed, native, f64, max_abs, ints, "; ".join(notes))


def _expected(truth, inputs: list, world_size: int, rank: int, cast, notes: list[str]) -> tuple[Any, list]:
    """(rank's expected output or None, the inputs it was computed from). truth.py written for
    the host (tensors made without a device, `.tolist()` loops) raises on GPU inputs: it is
    then run on host copies, and those copies are what later calls get."""
    from pkb_ray.selfcheck.truth import on_host

    try:
        return truth.expected([cast(i) for i in inputs], world_size)[rank], inputs
    except (TruthTimeout, torch.cuda.OutOfMemoryError):
        raise
    except Exception as exc:  # noqa: BLE001 - truth.py may raise anything
        first = f"{type(exc).__name__}: {str(exc)[:120]}"
    if any(t.device.type != "cpu" for i in inputs for _, t in tree.tensors(i)):
        host = [on_host(i) for i in inputs]
        try:
            return truth.expected([cast(i) for i in host], world_size)[rank], host
        except (TruthTimeout, torch.cuda.OutOfMemoryError):
            raise
        except Exception as exc:  # noqa: BLE001
            first += f"; on the host: {type(exc).__name__}: {str(exc)[:120]}"
    notes.append(("float64 " if cast is upcast else "") + f"truth.py failed ({first})")
    return None, inputs
