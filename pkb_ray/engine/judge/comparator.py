"""Compare one rank's output(s) with the reference: shape, dtype, device, then values.

Every mismatch is a verdict, never an exception: a candidate returning a list, None, a
tensor on the wrong device or of the wrong dtype is `incorrect`; NaN or Inf anywhere in a
candidate output (where the reference has none) is `nan`. Floating values are compared in
float64, as |out - ref| <= atol + rtol * |ref| elementwise (torch.allclose's rule); integer
and boolean tensors exactly.

torch is used as it is: this runs in the judge (and the self-check), which never imports
candidate code, so nothing here can have been patched.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

import torch

from pkb_ray.engine.wire.trees import Mismatch
from pkb_ray.records import FailureClass


@dataclass
class Verdict:
    ok: bool
    failure: FailureClass | None = None
    message: str = ""
    max_abs_error: float | None = None


def _describe(t: Any) -> str:
    if isinstance(t, torch.Tensor):
        return f"Tensor(shape={tuple(t.shape)}, dtype={t.dtype}, device={t.device})"
    return type(t).__name__


def dtype_step(name: str) -> float:
    """The relative step of a floating dtype named as in problem.yaml (0.0 for any other):
    what a ranked comparison counts as a tie at the least (_compare_ranked_ids)."""
    dtype = getattr(torch, str(name), None)
    return float(torch.finfo(dtype).eps) if isinstance(dtype, torch.dtype) and dtype.is_floating_point else 0.0


def compare(output: Any, reference: Any, atol: float, rtol: float,
            ranked: Sequence[tuple[int, int]] = (), ranked_step: float = 0.0) -> Verdict:
    """Verdict for one rank's output against the reference output of the same inputs.

    Outputs may nest: tuples and lists (either type stands for the other; the lengths must
    match), dicts (the same keys), tensors, and plain values (ints, bools, strings and None
    must be equal; floats within atol + rtol * |ref|). `ranked`: pairs (values, ids) of
    top-level outputs that are a top-k (ProblemSpec.ranked_outputs): the ids are compared
    up to ties of the values (_compare_ranked_ids). `ranked_step`: the relative step of the
    dtype the problem computes in (dtype_step), for values returned in a wider one."""
    if not isinstance(reference, (tuple, list)):
        # A single output may come back wrapped in a one-element tuple or list (PKB accepts both).
        if isinstance(output, (tuple, list)) and len(output) == 1 and not isinstance(reference, dict):
            output = output[0]
        return _compare_tree(output, reference, atol, rtol, "output")
    if not isinstance(output, (tuple, list)):
        output = (output,)
    if ranked and len(output) == len(reference):
        return _compare_ranked(output, reference, atol, rtol, ranked, ranked_step)
    return _compare_tree(output, reference, atol, rtol, "output", top=True)


def _compare_ranked(o: Sequence[Any], r: Sequence[Any], atol: float, rtol: float,
                    ranked: Sequence[tuple[int, int]], step: float) -> Verdict:
    """The outputs in order, but each ids output of a ranked pair after every other output
    (its values among them) and up to its values' ties. A declaration that names an output
    the reference does not have is ignored (the outputs are compared as any)."""
    ids_of = {ids: values for values, ids in ranked if 0 <= ids < len(r) and 0 <= values < len(r)}
    worst = 0.0
    for i, (oi, ri) in enumerate(zip(o, r)):
        if i not in ids_of:
            v = _compare_tree(oi, ri, atol, rtol, f"output {i}")
            if not v.ok:
                return v
            worst = max(worst, v.max_abs_error or 0.0)
    for i in sorted(ids_of):
        v = _compare_ranked_ids(o[i], r[i], o[ids_of[i]], r[ids_of[i]], atol, rtol, step, f"output {i}",
                                f"output {ids_of[i]}")
        if not v.ok:
            return v
    return Verdict(True, max_abs_error=worst)


RANKED_CELLS = 1 << 24
"""Rows of a ranked comparison are taken this many (row, position, position) cells at a time."""


def _compare_ranked_ids(o: Any, r: Any, o_values: Any, r_values: Any, atol: float, rtol: float, step: float,
                        where: str, values_at: str) -> Verdict:
    """The ids of a top-k along the last dimension, beside its values (both sides' values
    already compared, within tolerance). Which of two items whose values tie comes first, or
    which one makes the cut at k, is the implementation's choice: a candidate that computes
    the values in another order (a matmul's accumulation) breaks near-ties its own way.

    Per row, the reach of a tie is twice the largest difference between the candidate's
    values and the reference's (a swap of two items shows as a difference of their gap),
    and at least one step of the values' dtype or of the one they were computed in, `step`,
    whichever is coarser (two items whose errors mirror each other swap with no difference
    to see: bfloat16 products returned as float32 did in 1 of 300 evaluations of the
    ranked_labels fixture). A position whose reference value is within reach of the
    row's least value (the cut) takes any id: its ties may be with items not returned. Every
    other position's id must be one the reference has at a value within reach of that
    position's, and the reference's id there one the candidate has within reach. Reach is
    measured from each position, never chained along the row: in a dense row every
    neighbour is within reach of the next. A candidate whose values are off by up to the
    tolerance gets that much freedom in its ids, no more.

    Anything that is not same-shaped tensors (integer ids, floating values) is compared as
    any output, and so is a top-1: its one id would be at the cut, never checked."""
    if not (isinstance(r, torch.Tensor) and isinstance(r_values, torch.Tensor) and type(o_values) is torch.Tensor
            and tuple(r_values.shape) == tuple(r.shape) == tuple(o_values.shape) and r.dim() >= 1
            and r_values.is_floating_point() and not r.is_floating_point() and not r.is_complex()
            and r.dtype != torch.bool and r.numel() > 0 and r.shape[-1] > 1):
        return _compare_tree(o, r, atol, rtol, where)
    checked = _tensor_mismatch(o, r, where)
    if checked is not None:
        return checked
    k = r.shape[-1]
    r64 = torch.reshape(r_values.detach().to(device=r.device, dtype=torch.float64), (-1, k))
    o64 = torch.reshape(o_values.detach().to(device=r.device, dtype=torch.float64), (-1, k))
    o_ids, r_ids = torch.reshape(o.detach(), (-1, k)), torch.reshape(r.detach(), (-1, k))
    off = torch.nan_to_num(torch.abs(torch.sub(o64, r64)), nan=0.0, posinf=0.0)
    reach = torch.mul(torch.amax(off, dim=-1, keepdim=True), 2.0)  # [rows, 1]
    step = max(step, float(torch.finfo(r_values.dtype).eps))
    ok = torch.ones_like(r_ids, dtype=torch.bool)
    rows = max(1, RANKED_CELLS // (k * k))
    for a in range(0, r64.shape[0], rows):
        rv, rc = r64[a:a + rows], reach[a:a + rows]
        oi, ri = o_ids[a:a + rows], r_ids[a:a + rows]
        here = torch.unsqueeze(rv, -1)
        there = torch.unsqueeze(rv, -2)
        span = torch.maximum(torch.unsqueeze(rc, -1),
                             torch.mul(torch.maximum(torch.abs(here), torch.abs(there)), step))
        near = torch.logical_or(torch.le(torch.abs(torch.sub(here, there)), span), torch.eq(here, there))
        cut = torch.amin(rv, dim=-1, keepdim=True)
        cut_span = torch.maximum(rc, torch.mul(torch.maximum(torch.abs(rv), torch.abs(cut)), step))
        free = torch.logical_or(torch.le(torch.abs(torch.sub(rv, cut)), cut_span), torch.eq(rv, cut))
        o_in = torch.any(torch.logical_and(near, torch.eq(torch.unsqueeze(oi, -1), torch.unsqueeze(ri, -2))), dim=-1)
        r_in = torch.any(torch.logical_and(near, torch.eq(torch.unsqueeze(ri, -1), torch.unsqueeze(oi, -2))), dim=-1)
        ok[a:a + rows] = torch.logical_or(free, torch.logical_and(o_in, r_in))
    bad = torch.reshape(torch.logical_not(ok), r.shape)
    n_bad = int(torch.sum(bad).item())
    if n_bad:
        first = tuple(int(i) for i in torch.nonzero(bad)[0].tolist())
        row = first[:-1]
        return Verdict(False, FailureClass.INCORRECT,
                       f"{where}: {n_bad} of {o.numel()} ids differ beyond ties of {values_at}'s values; "
                       f"first at index {first}: got {o[first].item()}, expected {r[first].item()} "
                       f"(row {row}: got {o[row].tolist()[:8]}..., expected {r[row].tolist()[:8]}...)")
    return Verdict(True, max_abs_error=0.0)


def _compare_tree(o: Any, r: Any, atol: float, rtol: float, where: str, top: bool = False) -> Verdict:
    if isinstance(r, (tuple, list)):
        if not isinstance(o, (tuple, list)):
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
    if isinstance(r, dict):
        if not isinstance(o, dict):
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
    if isinstance(r, torch.Tensor):
        return _compare_tensor(o, r, atol, rtol, where)
    return _compare_value(o, r, atol, rtol, where)


def _compare_value(o: Any, r: Any, atol: float, rtol: float, where: str) -> Verdict:
    if isinstance(o, torch.Tensor) and type(o) is torch.Tensor and o.numel() == 1 and \
            isinstance(r, (int, float)) and not isinstance(r, bool):
        o = o.item()  # a one-element tensor for a Python number: PKB references return either
    if isinstance(r, float) and isinstance(o, (float, int)) and not isinstance(o, bool):
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
    if type(o) is not type(r) or o != r:
        return Verdict(False, FailureClass.INCORRECT, f"{where}: {o!r} != {r!r}")
    return Verdict(True, max_abs_error=0.0)


def _compare_tensor(o: Any, r: torch.Tensor, atol: float, rtol: float, where: str) -> Verdict:
    checked = _tensor_mismatch(o, r, where)
    if checked is not None:
        return checked
    if o.numel() == 0:
        return Verdict(True, max_abs_error=0.0)
    if r.dtype == torch.bool or r.is_complex() or not r.is_floating_point():
        return _compare_exact_or_complex(o, r, atol, rtol, where)
    o64 = o.detach().to(dtype=torch.float64)
    r64 = r.detach().to(dtype=torch.float64)
    return _compare_real(o64, r64, atol, rtol, where, o.numel())


def _tensor_mismatch(o: Any, r: torch.Tensor, where: str) -> Verdict | None:
    """The verdict where `o` is not a plain tensor of `r`'s shape, dtype and device; else None."""
    if type(o) is Mismatch:
        # The judge could not copy the worker's tensor into the reference's slot: its note
        # names both sides ("of shape [4, 8], expected [4, 4]"); the type name said nothing.
        return Verdict(False, FailureClass.INCORRECT, f"{where}: a tensor {o.what}")
    if not isinstance(o, torch.Tensor):
        return Verdict(False, FailureClass.INCORRECT,
                       f"{where}: expected {_describe(r)}, got {_describe(o)}")
    if type(o) is not torch.Tensor:
        # A subclass could override __torch_function__ and lie to every check below.
        return Verdict(False, FailureClass.INCORRECT,
                       f"{where}: a torch.Tensor subclass ({type(o).__name__}), expected a plain Tensor")
    if tuple(o.shape) != tuple(r.shape):
        return Verdict(False, FailureClass.INCORRECT,
                       f"{where}: shape {tuple(o.shape)}, expected {tuple(r.shape)}")
    if o.dtype != r.dtype:
        return Verdict(False, FailureClass.INCORRECT, f"{where}: dtype {o.dtype}, expected {r.dtype}")
    if o.device != r.device:
        return Verdict(False, FailureClass.INCORRECT, f"{where}: device {o.device}, expected {r.device}")
    return None


def _compare_exact_or_complex(o: torch.Tensor, r: torch.Tensor, atol: float, rtol: float,
                              where: str) -> Verdict:
    if not r.is_floating_point() and not r.is_complex():
        # Booleans and integers (indices, counts, token ids) are equal or wrong: within
        # upstream's rtol of 1e-2, index 1000 would take any of 990-1010.
        bad = torch.logical_not(torch.eq(o, r))
        n_bad = int(torch.sum(bad).item())
        if n_bad:
            kind = "booleans" if r.dtype == torch.bool else f"integers ({r.dtype}, compared exactly)"
            first = tuple(int(i) for i in torch.nonzero(bad)[0].tolist())
            return Verdict(False, FailureClass.INCORRECT,
                           f"{where}: {n_bad} of {o.numel()} {kind} differ; first at index {first}: "
                           f"got {o[first].item()}, expected {r[first].item()}")
        return Verdict(True, max_abs_error=0.0)
    # Complex: the real and imaginary parts are both compared (casting to real would drop one).
    o_ri = torch.view_as_real(o.detach().resolve_conj()).to(torch.float64)
    r_ri = torch.view_as_real(r.detach().resolve_conj()).to(torch.float64)
    return _compare_real(o_ri, r_ri, atol, rtol, where, o.numel())


def _compare_real(o64: torch.Tensor, r64: torch.Tensor, atol: float, rtol: float, where: str,
                  numel: int) -> Verdict:
    o_bad = torch.logical_not(torch.isfinite(o64))
    r_bad = torch.logical_not(torch.isfinite(r64))
    if _any_where(o_bad, r_bad).item():
        return Verdict(False, FailureClass.NAN, f"{where}: NaN or Inf where the reference is finite")
    both_finite = torch.logical_not(torch.logical_or(o_bad, r_bad))
    diff = torch.abs(torch.sub(o64, r64))
    diff = torch.where(both_finite, diff, torch.zeros_like(diff))
    err = float(torch.max(diff).item())
    tol = torch.add(torch.mul(torch.abs(r64), rtol), atol)
    within = torch.logical_or(torch.le(diff, tol), torch.logical_not(both_finite))
    # Non-finite positions must match the reference exactly (same inf sign / NaN).
    same_nonfinite = torch.all(torch.logical_or(both_finite, _same_nonfinite(o64, r64)))
    if not bool(torch.all(within).item()) or not bool(same_nonfinite.item()):
        bad = torch.logical_not(torch.logical_and(within, torch.logical_or(both_finite, _same_nonfinite(o64, r64))))
        n_bad = int(torch.sum(bad).item())
        return Verdict(False, FailureClass.INCORRECT,
                       f"{where}: {n_bad} of {numel} elements outside atol={atol} "
                       f"rtol={rtol}; max abs error {err:.3g}; {_first_mismatch(o64, r64, bad)}",
                       max_abs_error=err)
    return Verdict(True, max_abs_error=err)


def _first_mismatch(o64: torch.Tensor, r64: torch.Tensor, bad: torch.Tensor) -> str:
    """Where to look first (an agent or a person debugging an indexing bug): the first
    mismatching position in row-major order, with both values (for a complex tensor the
    last index is 0 for the real part, 1 for the imaginary)."""
    idx = tuple(int(i) for i in torch.nonzero(bad)[0].tolist())
    return f"first at index {idx}: got {o64[idx].item():.6g}, expected {r64[idx].item():.6g}"


def _any_where(o_bad: torch.Tensor, r_bad: torch.Tensor) -> torch.Tensor:
    """Any position non-finite in the output but finite in the reference."""
    return torch.any(torch.logical_and(o_bad, torch.logical_not(r_bad)))


def _same_nonfinite(o: torch.Tensor, r: torch.Tensor) -> torch.Tensor:
    return torch.logical_or(torch.eq(o, r), torch.logical_and(torch.isnan(o), torch.isnan(r)))
