"""Problem arguments and outputs as trees: tensors and plain values nested in lists, tuples
and dicts, as real code passes them (67 of upstream PKB's 87 problems pass non-tensors).

A native problem's leaves are NATIVE_LEAF_TYPES. Problems imported from upstream may also
pass objects this format does not describe (process groups, nn.Modules, torch.Size); the
walkers here treat those as opaque leaves instead of failing on them.
"""

from __future__ import annotations

import copy
from typing import Any, Iterator

import torch

NATIVE_LEAF_TYPES = (torch.Tensor, int, float, bool, str, type(None))
_CONTAINERS = (list, tuple, dict)


def leaves(tree: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    """(path, leaf) for every leaf, depth first; paths read like `[1]['w'][0]`."""
    if isinstance(tree, dict):
        for k, v in tree.items():
            yield from leaves(v, f"{path}[{k!r}]")
    elif isinstance(tree, (list, tuple)):
        for i, v in enumerate(tree):
            yield from leaves(v, f"{path}[{i}]")
    else:
        yield path, tree


def tensors(tree: Any) -> Iterator[tuple[str, torch.Tensor]]:
    """(path, tensor) for every tensor leaf (the parameters of an nn.Module leaf included)."""
    for path, leaf in leaves(tree):
        if isinstance(leaf, torch.Tensor):
            yield path, leaf
        elif isinstance(leaf, torch.nn.Module):
            for name, t in leaf.state_dict().items():
                yield f"{path}.{name}", t


def native_type_errors(tree: Any, path: str = "") -> list[str]:
    """Why `tree` is not a native argument/output: leaves of other types, non-str dict keys."""
    errors: list[str] = []
    if isinstance(tree, dict):
        bad = [k for k in tree if not isinstance(k, str)]
        if bad:
            errors.append(f"{path or 'value'}: dict keys must be str, got {bad[0]!r}")
        for k, v in tree.items():
            errors += native_type_errors(v, f"{path}[{k!r}]")
    elif isinstance(tree, (list, tuple)):
        if type(tree) not in (list, tuple):
            # torch.Size, namedtuples: a candidate would have to rebuild the exact type
            errors.append(f"{path}: a {type(tree).__name__}; use a plain list or tuple")
        for i, v in enumerate(tree):
            errors += native_type_errors(v, f"{path}[{i}]")
    elif isinstance(tree, torch.Tensor):
        if type(tree) is not torch.Tensor and not isinstance(tree, torch.nn.Parameter):
            errors.append(f"{path}: a {type(tree).__name__} (a torch.Tensor subclass)")
        elif tree.layout != torch.strided:
            errors.append(f"{path}: a {tree.layout} tensor; only dense (strided) tensors")
    elif not isinstance(tree, NATIVE_LEAF_TYPES):
        errors.append(f"{path}: a {type(tree).__name__}, not one of Tensor, int, float, bool, str, "
                      f"None or a list/tuple/dict of these")
    return errors


def clone(tree: Any) -> Any:
    """A copy whose tensors (and modules) are new: what a reference may be handed safely.
    Opaque leaves (process groups, ints) are shared: they are immutable or handles."""
    if isinstance(tree, torch.Tensor):
        return tree.clone()
    if isinstance(tree, torch.nn.Module):
        return copy.deepcopy(tree)
    if isinstance(tree, dict):
        return {k: clone(v) for k, v in tree.items()}
    if isinstance(tree, (list, tuple)):
        items = [clone(v) for v in tree]
        if type(tree) in (list, tuple):
            return type(tree)(items)
        try:  # torch.Size and namedtuples rebuild from their items
            return type(tree)(items)
        except TypeError:
            return type(tree)(*items)
    return tree


def first_difference(a: Any, b: Any, path: str = "") -> str | None:
    """Where two trees differ (structure, type, shape, dtype or any value), or None.

    Tensors are equal when shape, dtype, layout and every element are (NaN equals NaN);
    modules when their types and state dicts are; process groups when they hold the same
    ranks; other objects by ==, or by type when == is not a plain bool."""
    where = path or "value"
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        if len(a) != len(b):
            return f"{where}: {len(a)} vs {len(b)} elements"
        for i, (x, y) in enumerate(zip(a, b)):
            d = first_difference(x, y, f"{path}[{i}]")
            if d:
                return d
        return None
    if isinstance(a, dict) and isinstance(b, dict):
        if list(a) != list(b):
            return f"{where}: keys {list(a)} vs {list(b)}"
        for k in a:
            d = first_difference(a[k], b[k], f"{path}[{k!r}]")
            if d:
                return d
        return None
    if type(a) is not type(b):
        return f"{where}: {type(a).__name__} vs {type(b).__name__}"
    if isinstance(a, torch.Tensor):
        return _tensor_difference(a, b, where)
    if isinstance(a, torch.nn.Module):
        return first_difference(a.state_dict(), b.state_dict(), f"{path}.state_dict()")
    if _is_process_group(a):
        # upstream builds a fresh group per call (new_group): the same ranks are the same argument
        ra, rb = _group_ranks(a), _group_ranks(b)
        return None if ra == rb else f"{where}: a process group of ranks {ra} vs {rb}"
    if isinstance(a, float) and a != a and b != b:  # NaN
        return None
    try:
        same = a == b
    except Exception:  # noqa: BLE001 - an object whose == raises is compared by type only
        return None
    if isinstance(same, bool):
        return None if same else f"{where}: {a!r} vs {b!r}"
    return None


def _is_process_group(x: Any) -> bool:
    import torch.distributed as dist

    return dist.is_available() and isinstance(x, dist.ProcessGroup)


def _group_ranks(pg) -> list[int] | None:
    import torch.distributed as dist

    try:
        return dist.get_process_group_ranks(pg)
    except Exception:  # noqa: BLE001 - a group this process is not part of
        return None


def _tensor_difference(a: torch.Tensor, b: torch.Tensor, where: str) -> str | None:
    if a.layout != b.layout or a.shape != b.shape or a.dtype != b.dtype:
        return (f"{where}: {a.layout}/{tuple(a.shape)}/{a.dtype} vs "
                f"{b.layout}/{tuple(b.shape)}/{b.dtype}")
    if a.is_sparse:
        a, b = a.coalesce(), b.coalesce()
        if not torch.equal(a.indices(), b.indices()):
            return f"{where}: sparse indices differ"
        return _tensor_difference(a.values(), b.values(), f"{where}.values()")
    if a.is_floating_point() or a.is_complex():
        nan_a, nan_b = torch.isnan(a), torch.isnan(b)
        if not torch.equal(nan_a, nan_b):
            return f"{where}: NaN at different places"
        if not torch.equal(torch.where(nan_a, 0, a), torch.where(nan_b, 0, b)):
            return f"{where}: values differ"
        return None
    return None if torch.equal(a, b) else f"{where}: values differ"


def is_constant(t: torch.Tensor) -> bool:
    """More than one element and all equal (a constant fill); bool masks never count."""
    if t.dtype == torch.bool or t.layout != torch.strided or t.numel() <= 1:
        return False
    flat = t.reshape(-1)
    return bool((flat == flat[0]).all())


def degeneracy(a: Any, c: Any) -> list[str]:
    """Why inputs `a` and `c` (one rank, two seeds) cannot tell a correct candidate from a
    shortcut: every seed alike, or every input tensor a constant fill. Empty when they can."""
    why = []
    if first_difference(a, c) is None:
        why.append("two seeds gave identical inputs")
    varied = [t for _, t in tensors(a) if t.numel() > 1 and t.dtype != torch.bool]
    if varied and all(is_constant(t) for t in varied):
        why.append("every input tensor is a constant fill")
    return why
