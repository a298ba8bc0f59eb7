"""NCCL's rule on the tensors of a collective, watched where references run on gloo.

NCCL refuses a collective or point-to-point op on a tensor that is not dense in its memory
format ("Tensors must be contiguous"); gloo on CPU takes it. So a reference that hands a
strided view to a collective passes `pkb problems check` and fails only on GPUs (as
ring_attention_backward_dp did at world size 1: its gradients were transposed views when
all-reduced). While `watch_layouts()` is active, every torch.distributed
collective and point-to-point op notes the tensors NCCL would refuse, then runs as before:
the check does not raise inside the reference, so no rank leaves its collectives early.
"""

from __future__ import annotations

import contextlib
import functools
from typing import Any, Iterator

CHECKED_OPS = (
    "all_reduce", "all_gather", "all_gather_into_tensor", "all_to_all", "all_to_all_single",
    "broadcast", "reduce", "reduce_scatter", "reduce_scatter_tensor", "gather", "scatter",
    "send", "recv",
)
"""torch.distributed functions whose tensor arguments NCCL requires dense
(ProcessGroupNCCL checks each tensor of these). Not isend/irecv: P2POp accepts only the
original functions (a wrapper fails its identity check), so those are watched through
batch_isend_irecv, where P2POps go."""


def _tensors(x: Any) -> Iterator[Any]:
    import torch

    if isinstance(x, torch.Tensor):
        yield x
    elif isinstance(x, (list, tuple)):
        for y in x:
            yield from _tensors(y)


def _dense(t) -> bool:
    import torch

    if t.is_contiguous():
        return True
    # NCCL takes a tensor dense in its suggested memory format (channels-last images too)
    fmt = {4: torch.channels_last, 5: torch.channels_last_3d}.get(t.dim())
    return fmt is not None and t.is_contiguous(memory_format=fmt)


@contextlib.contextmanager
def watch_layouts() -> Iterator[list[str]]:
    """Within the block, the list yielded gathers one line per tensor NCCL would refuse
    (the op, the shape and the strides). Meant for a rank process that runs references."""
    import torch.distributed as dist

    seen: list[str] = []

    def note(name: str, values: tuple) -> None:
        for t in _tensors(values):
            if not _dense(t):
                seen.append(f"torch.distributed.{name} got a non-contiguous tensor of shape "
                            f"{tuple(t.shape)} (strides {t.stride()}): NCCL refuses it "
                            f"('Tensors must be contiguous'); gloo on CPU does not")

    def wrap(name: str, fn):
        @functools.wraps(fn)
        def watched(*args, **kwargs):
            note(name, args + tuple(kwargs.values()))
            return fn(*args, **kwargs)
        return watched

    saved = {name: getattr(dist, name) for name in CHECKED_OPS if hasattr(dist, name)}
    saved_batch = dist.batch_isend_irecv

    @functools.wraps(saved_batch)
    def batch(p2p_op_list):
        note("batch_isend_irecv", tuple(op.tensor for op in p2p_op_list))
        return saved_batch(p2p_op_list)

    try:
        for name, fn in saved.items():
            setattr(dist, name, wrap(name, fn))
        dist.batch_isend_irecv = batch
        yield seen
    finally:
        for name, fn in saved.items():
            setattr(dist, name, fn)
        dist.batch_isend_irecv = saved_batch
