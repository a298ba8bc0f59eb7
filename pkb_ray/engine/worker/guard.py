"""The NCCL-free guard: while candidate code runs, collectives are refused.

"NCCL-free" cannot be a backend choice alone: the reference needs NCCL on CUDA, and gloo
runs collectives on CUDA tensors through the host (docs/design.md). So once the guard is
installed, every Python entry point to a collective refuses to run and raises
`ForbiddenAPIError`; the refusal is also recorded, so a candidate that catches the
exception still fails (`violations()`).

Refused: torch.distributed collectives, p2p, barriers and *_object variants; functional
collectives (the Python module and the torch.ops._c10d_functional* ops); torch.ops.c10d
ops; ProcessGroup / Backend methods (pg.allreduce ...); torch.cuda.nccl; symm_mem's
NCCL-backed ops (nccl_put ...); symmetric memory's NCCL backend; new_group /
new_subgroups except with backend="gloo".
Allowed: symmetric memory (`_symmetric_memory.empty/rendezvous`, handle.barrier,
put_signal/wait_signal are C++ and need no collective), everything else in torch.

The guard runs only in workers, where the harness itself runs no collective: there is no
exemption for a candidate to borrow. It is the second layer; the first is the worker's
process group, which cannot communicate (worker/process_group.py), and the NCCL stub.
"""

from __future__ import annotations

from typing import Any, Callable


class ForbiddenAPIError(RuntimeError):
    """A candidate called an API the guard refuses (classified forbidden_api)."""


_COLLECTIVES = (
    "all_reduce", "all_reduce_coalesced", "all_gather", "all_gather_into_tensor",
    "all_gather_coalesced", "_all_gather_base", "reduce_scatter", "reduce_scatter_tensor",
    "_reduce_scatter_base", "all_to_all", "all_to_all_single", "broadcast", "reduce", "gather",
    "scatter", "send", "recv", "isend", "irecv", "batch_isend_irecv", "barrier",
    "monitored_barrier", "all_gather_object", "broadcast_object_list", "gather_object",
    "scatter_object_list", "send_object_list", "recv_object_list", "_coalescing_manager",
)
_GROUP_MAKERS = ("new_group", "new_subgroups", "new_subgroups_by_enumeration", "split_group")
_PG_METHODS = (
    "allreduce", "allreduce_coalesced", "allgather", "allgather_coalesced",
    "allgather_into_tensor_coalesced", "all_gather_single", "all_gather_single_coalesced",
    "_allgather_base", "reduce_scatter", "reduce_scatter_single", "_reduce_scatter_base",
    "reduce_scatter_single_coalesced", "reduce_scatter_tensor_coalesced", "alltoall",
    "alltoall_base", "all_to_all_single", "broadcast", "reduce", "gather", "scatter", "send",
    "recv", "recv_anysource", "barrier", "monitored_barrier",
)
_OP_NAMESPACES = ("c10d", "_c10d_functional", "_c10d_functional_autograd")


class _State:
    installed = False
    violations: list[str] = []


_state = _State()


def violations() -> list[str]:
    """APIs refused since install (a candidate may have swallowed the exception)."""
    return list(_state.violations)


def is_installed() -> bool:
    return _state.installed


def _refuse(name: str) -> None:
    _state.violations.append(name)
    raise ForbiddenAPIError(
        f"{name} is not allowed in a candidate: the benchmark asks for NCCL-free code "
        "(use torch.distributed._symmetric_memory and direct peer access)")


def _wrap(name: str, original: Callable[..., Any],
          allow: Callable[..., bool] | None = None) -> Callable[..., Any]:
    def guarded(*args: Any, **kwargs: Any) -> Any:
        if allow is not None and allow(*args, **kwargs):
            return original(*args, **kwargs)
        _refuse(name)

    guarded.__name__ = getattr(original, "__name__", name)
    guarded.__doc__ = getattr(original, "__doc__", None)
    guarded.__wrapped_by_pkb_guard__ = True  # type: ignore[attr-defined]
    return guarded


class _RefusedOp:
    """Stands in for an OpOverloadPacket: calling it or any overload (`.default`) refuses."""

    def __init__(self, name: str, packet: Any) -> None:
        self._name = name
        self._packet = packet

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        _refuse(self._name)

    def __getattr__(self, attr: str) -> Any:
        overload = getattr(self._packet, attr)
        if callable(overload) and not attr.startswith("_"):
            return _RefusedOp(f"{self._name}.{attr}", overload)
        return overload


def _allow_gloo_group(*args: Any, **kwargs: Any) -> bool:
    backend = kwargs.get("backend")
    if backend is None:
        # new_group(ranks, timeout, backend, ...): third positional argument.
        backend = args[2] if len(args) > 2 else None
    if backend is None:
        import torch.distributed as dist
        backend = dist.get_backend() if dist.is_initialized() else "gloo"
    return "nccl" not in str(backend).lower()


def install() -> None:
    """Patch the collective entry points (idempotent). Call in a worker only, after its
    process group exists and before importing the candidate."""
    if _state.installed:
        return
    import torch
    import torch.distributed as dist
    import torch.distributed.distributed_c10d as c10d

    for mod in (dist, c10d):
        for name in _COLLECTIVES:
            if hasattr(mod, name):
                setattr(mod, name, _wrap(f"torch.distributed.{name}", getattr(mod, name)))
        for name in _GROUP_MAKERS:
            if hasattr(mod, name):
                setattr(mod, name, _wrap(f"torch.distributed.{name} (non-gloo)",
                                         getattr(mod, name), allow=_allow_gloo_group))

    import torch.distributed._functional_collectives as fc
    for name in dir(fc):
        obj = getattr(fc, name)
        if callable(obj) and not isinstance(obj, type) and any(
                k in name for k in ("all_", "reduce", "broadcast", "gather", "scatter",
                                    "isend", "irecv", "p2p", "permute_tensor")):
            setattr(fc, name, _wrap(f"functional collective {name}", obj))

    c = torch._C._distributed_c10d
    for cls_name in ("ProcessGroup", "Backend", "ProcessGroupGloo", "ProcessGroupNCCL"):
        cls = getattr(c, cls_name, None)
        if cls is None:
            continue
        for meth in _PG_METHODS:
            if meth in vars(cls):
                setattr(cls, meth, _wrap(f"{cls_name}.{meth}", vars(cls)[meth]))

    all_ops = torch._C._dispatch_get_all_op_names()
    for ns in _OP_NAMESPACES:
        namespace = getattr(torch.ops, ns)
        for op in sorted({n.split("::", 1)[1].split(".")[0] for n in all_ops
                          if n.startswith(ns + "::")}):
            if op in ("wait_tensor", "check_for_nan"):
                continue
            setattr(namespace, op, _RefusedOp(f"torch.ops.{ns}.{op}", getattr(namespace, op)))
    # symm_mem ops that run on NCCL (the symmetric-memory API itself stays allowed).
    symm_ops = {n.split("::", 1)[1].split(".")[0] for n in all_ops if n.startswith("symm_mem::nccl")}
    for op in sorted(symm_ops):
        setattr(torch.ops.symm_mem, op, _RefusedOp(f"torch.ops.symm_mem.{op}",
                                                   getattr(torch.ops.symm_mem, op)))
    try:
        import torch.distributed._symmetric_memory as sm
        if hasattr(sm, "set_backend"):
            sm.set_backend = _wrap("symmetric memory NCCL backend", sm.set_backend,
                                   allow=lambda name, *a, **k: "nccl" not in str(name).lower())
    except ImportError:
        pass

    import torch.cuda.nccl as tnccl
    for name in ("all_reduce", "reduce", "broadcast", "all_gather", "reduce_scatter", "init_rank"):
        if hasattr(tnccl, name):
            setattr(tnccl, name, _wrap(f"torch.cuda.nccl.{name}", getattr(tnccl, name)))
    _state.installed = True
