"""Compare one rank's output(s) with the reference: shape, dtype, device, then values.

Every mismatch is a verdict, never an exception: a candidate returning a list, None, a
tensor on the wrong device or of the wrong dtype is `incorrect`; NaN or Inf anywhere in a
candidate output (where the reference has none) is `nan`. Values are compared in float64,
as |out - ref| <= atol + rtol * |ref| elementwise (torch.allclose's rule).

The functions used are bound at import, before candidate code runs, so a candidate that
patches torch.Tensor methods or torch.allclose cannot change the verdict.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import torch

from pkb_ray.engine.wire.trees import Mismatch
from pkb_ray.records import FailureClass

# Bound before any candidate import (see module docstring).
_Tensor = torch.Tensor
_isfinite = torch.isfinite
_abs = torch.abs
_sub = torch.sub
_le = torch.le
_add = torch.add
_mul = torch.mul
_all = torch.all
_logical_or = torch.logical_or
_logical_not = torch.logical_not
_max = torch.max
_to = torch.Tensor.to
_item = torch.Tensor.item
_numel = torch.Tensor.numel
_isinstance = isinstance
_type = type
_where = torch.where
_zeros_like = torch.zeros_like
_any = torch.any
_sum = torch.sum
_eq = torch.eq
_isnan = torch.isnan
_logical_and = torch.logical_and
_detach = torch.Tensor.detach
_nonzero = torch.nonzero
_len_function_modes = getattr(torch._C, "_len_torch_function_stack", lambda: 0)
_len_dispatch_modes = getattr(torch._C, "_len_torch_dispatch_stack", lambda: 0)


@dataclass
class Verdict:
    ok: bool
    failure: FailureClass | None = None
    message: str = ""
    max_abs_error: float | None = None


def _describe(t: Any) -> str:
    if _isinstance(t, _Tensor):
        return f"Tensor(shape={tuple(t.shape)}, dtype={t.dtype}, device={t.device})"
    return type(t).__name__


def compare(output: Any, reference: Any, atol: float, rtol: float) -> Verdict:
    """Verdict for one rank's output against the reference output of the same inputs.

    Outputs may nest: tuples and lists (either type stands for the other; the lengths must
    match), dicts (the same keys), tensors, and plain values (ints, bools, strings and None
    must be equal; floats within atol + rtol * |ref|)."""
    if _len_function_modes() or _len_dispatch_modes():
        # A mode left active by the candidate would sit between these checks and the data.
        return Verdict(False, FailureClass.INCORRECT,
                       "a torch function/dispatch mode is still active after the call")
    if not _isinstance(reference, (tuple, list)):
        # A single output may come back wrapped in a one-element tuple or list (PKB accepts both).
        if _isinstance(output, (tuple, list)) and len(output) == 1 and not _isinstance(reference, dict):
            output = output[0]
        return _compare_tree(output, reference, atol, rtol, "output")
    if not _isinstance(output, (tuple, list)):
        output = (output,)
    return _compare_tree(output, reference, atol, rtol, "output", top=True)


def _compare_tree(o: Any, r: Any, atol: float, rtol: float, where: str, top: bool = False) -> Verdict:
    if _isinstance(r, (tuple, list)):
        if not _isinstance(o, (tuple, list)):
            return Verdict(False, FailureClass.INCORRECT,
                           f"{where}: expected a sequence of {len(r)}, got {_describe(o)}")
        if len(o) != len(r):
            return Verdict(False, FailureClass.INCORRECT,
                           f"returned {len(o)} output(s), expected {len(r)}" if top
                           else f"{where}: {len(o)} element(s), expected {len(r)}")
        worst = 0.0
        for i, (oi, ri) in enumerate(zip(o, r)):
            v = _compare_tree(oi, ri, atol, rtol, f"output {i}" if top else f"{where}[{i}]")
            if not v.ok:
                return v
            worst = max(worst, v.max_abs_error or 0.0)
        return Verdict(True, max_abs_error=worst)
    if _isinstance(r, dict):
        if not _isinstance(o, dict):
            return Verdict(False, FailureClass.INCORRECT, f"{where}: expected a dict, got {_describe(o)}")
        if set(o) != set(r):
            return Verdict(False, FailureClass.INCORRECT,
                           f"{where}: keys {sorted(map(str, o))}, expected {sorted(map(str, r))}")
        worst = 0.0
        for k in r:
            v = _compare_tree(o[k], r[k], atol, rtol, f"{where}[{k!r}]")
            if not v.ok:
                return v
            worst = max(worst, v.max_abs_error or 0.0)
        return Verdict(True, max_abs_error=worst)
    if _isinstance(r, _Tensor):
        return _compare_tensor(o, r, atol, rtol, where)
    return _compare_value(o, r, atol, rtol, where)


def _compare_value(o: Any, r: Any, atol: float, rtol: float, where: str) -> Verdict:
    if _isinstance(o, _Tensor) and _type(o) is _Tensor and _numel(o) == 1 and \
            _isinstance(r, (int, float)) and not _isinstance(r, bool):
        o = _item(o)  # a one-element tensor for a Python number: PKB references return either
    if _isinstance(r, float) and _isinstance(o, (float, int)) and not _isinstance(o, bool):
        if math.isnan(r) or math.isnan(o):
            ok = math.isnan(r) and math.isnan(o)
            return Verdict(ok, None if ok else FailureClass.NAN if math.isnan(o) else FailureClass.INCORRECT,
                           "" if ok else f"{where}: {o!r}, expected {r!r}")
        if math.isinf(r) or math.isinf(o):
            ok = o == r
            return Verdict(ok, None if ok else FailureClass.INCORRECT, "" if ok else f"{where}: {o!r}, expected {r!r}")
        err = abs(o - r)
        if err <= atol + rtol * abs(r):
            return Verdict(True, max_abs_error=err)
        return Verdict(False, FailureClass.INCORRECT,
                       f"{where}: {o!r}, expected {r!r} (atol={atol} rtol={rtol})", max_abs_error=err)
    if _type(o) is not _type(r) or o != r:
        return Verdict(False, FailureClass.INCORRECT, f"{where}: {o!r} != {r!r}")
    return Verdict(True, max_abs_error=0.0)


def _compare_tensor(o: Any, r: torch.Tensor, atol: float, rtol: float, where: str) -> Verdict:
    if _type(o) is Mismatch:
        # The judge could not copy the worker's tensor into the reference's slot: its note
        # names both sides ("of shape [4, 8], expected [4, 4]"); the type name said nothing.
        return Verdict(False, FailureClass.INCORRECT, f"{where}: a tensor {o.what}")
    if not _isinstance(o, _Tensor):
        return Verdict(False, FailureClass.INCORRECT,
                       f"{where}: expected {_describe(r)}, got {_describe(o)}")
    if _type(o) is not _Tensor:
        # A subclass could override __torch_function__ and lie to every check below.
        return Verdict(False, FailureClass.INCORRECT,
                       f"{where}: a torch.Tensor subclass ({_type(o).__name__}), expected a plain Tensor")
    if tuple(o.shape) != tuple(r.shape):
        return Verdict(False, FailureClass.INCORRECT,
                       f"{where}: shape {tuple(o.shape)}, expected {tuple(r.shape)}")
    if o.dtype != r.dtype:
        return Verdict(False, FailureClass.INCORRECT, f"{where}: dtype {o.dtype}, expected {r.dtype}")
    if o.device != r.device:
        return Verdict(False, FailureClass.INCORRECT, f"{where}: device {o.device}, expected {r.device}")
    if _numel(o) == 0:
        return Verdict(True, max_abs_error=0.0)
    if r.dtype == torch.bool or r.is_complex():
        return _compare_exact_or_complex(o, r, atol, rtol, where)
    o64 = _to(_detach(o), dtype=torch.float64)
    r64 = _to(_detach(r), dtype=torch.float64)
    return _compare_real(o64, r64, atol, rtol, where, _numel(o))


def _compare_exact_or_complex(o: torch.Tensor, r: torch.Tensor, atol: float, rtol: float,
                              where: str) -> Verdict:
    if r.dtype == torch.bool:
        n_bad = int(_item(_sum(_logical_not(_eq(o, r)))))
        if n_bad:
            return Verdict(False, FailureClass.INCORRECT, f"{where}: {n_bad} of {_numel(o)} booleans differ")
        return Verdict(True, max_abs_error=0.0)
    # Complex: the real and imaginary parts are both compared (casting to real would drop one).
    o_ri = torch.view_as_real(_detach(o).resolve_conj()).to(torch.float64)
    r_ri = torch.view_as_real(_detach(r).resolve_conj()).to(torch.float64)
    return _compare_real(o_ri, r_ri, atol, rtol, where, _numel(o))


def _compare_real(o64: torch.Tensor, r64: torch.Tensor, atol: float, rtol: float, where: str,
                  numel: int) -> Verdict:
    o_bad = _logical_not(_isfinite(o64))
    r_bad = _logical_not(_isfinite(r64))
    if _item(_any_where(o_bad, r_bad)):
        return Verdict(False, FailureClass.NAN, f"{where}: NaN or Inf where the reference is finite")
    both_finite = _logical_not(_logical_or(o_bad, r_bad))
    diff = _abs(_sub(o64, r64))
    diff = _where(both_finite, diff, _zeros_like(diff))
    err = float(_item(_max(diff)))
    tol = _add(_mul(_abs(r64), rtol), atol)
    within = _logical_or(_le(diff, tol), _logical_not(both_finite))
    # Non-finite positions must match the reference exactly (same inf sign / NaN).
    same_nonfinite = _all(_logical_or(both_finite, _same_nonfinite(o64, r64)))
    if not bool(_item(_all(within))) or not bool(_item(same_nonfinite)):
        bad = _logical_not(_logical_and(within, _logical_or(both_finite, _same_nonfinite(o64, r64))))
        n_bad = int(_item(_sum(bad)))
        return Verdict(False, FailureClass.INCORRECT,
                       f"{where}: {n_bad} of {numel} elements outside atol={atol} "
                       f"rtol={rtol}; max abs error {err:.3g}; {_first_mismatch(o64, r64, bad)}",
                       max_abs_error=err)
    return Verdict(True, max_abs_error=err)


def _first_mismatch(o64: torch.Tensor, r64: torch.Tensor, bad: torch.Tensor) -> str:
    """Where to look first (an agent or a person debugging an indexing bug): the first
    mismatching position in row-major order, with both values (for a complex tensor the
    last index is 0 for the real part, 1 for the imaginary)."""
    idx = tuple(int(i) for i in _nonzero(bad)[0].tolist())
    return f"first at index {idx}: got {_item(o64[idx]):.6g}, expected {_item(r64[idx]):.6g}"


def _any_where(o_bad: torch.Tensor, r_bad: torch.Tensor) -> torch.Tensor:
    """Any position non-finite in the output but finite in the reference."""
    return _any(_logical_and(o_bad, _logical_not(r_bad)))


def _same_nonfinite(o: torch.Tensor, r: torch.Tensor) -> torch.Tensor:
    return _logical_or(_eq(o, r), _logical_and(_isnan(o), _isnan(r)))
