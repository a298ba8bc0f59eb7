"""Bytes one rank sends and receives in one collective, by the least traffic any algorithm
needs (the convention of the problems' `nvlink_bytes_per_rank` and of nccl-tests' bus
bandwidth), from the op's tensors and its group.

With n the bytes of the reduced or exchanged tensor and w the group's size:
  all-reduce       2 (w-1)/w n each way (reduce-scatter then all-gather)
  all-gather       (w-1) x the input each way
  reduce-scatter   (w-1) x the output each way
  all-to-all       what leaves for the others / arrives from them (the splits say how much)
  broadcast        n (the busiest rank forwards the whole tensor)
  reduce           n
  gather, scatter  the root receives / sends (w-1) x one rank's part; the others n
  send, recv       n one way

The ops are PyTorch's dispatcher ops: `c10d.*` (torch.distributed's functions) and
`_c10d_functional.*` (functional collectives, torch.compile's).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

NO_TRAFFIC = frozenset({"barrier", "monitored_barrier_", "wait_tensor", "_wrap_tensor_autograd", "check_for_nan"})


@dataclass(frozen=True)
class Traffic:
    sent: float
    recv: float


def nbytes(x: Any) -> int:
    """Bytes of every tensor in x (a tensor, or lists of them)."""
    if isinstance(x, torch.Tensor):
        return x.numel() * x.element_size()
    if isinstance(x, (list, tuple)):
        return sum(nbytes(v) for v in x)
    return 0




def _split_bytes(t: torch.Tensor | None, splits: Any, me: int, w: int) -> float:
    """Bytes of `t` (split along dim 0) that are not this rank's own part."""
    if t is None or t.numel() == 0:
        return 0.0
    total = nbytes(t)
    splits = [int(s) for s in splits or []]
    if not splits:
        return total * (w - 1) / w
    rows = t.shape[0] if t.dim() else 1
    own = splits[me] if 0 <= me < len(splits) else 0
    return total * (sum(splits) - own) / max(rows, 1)


def traffic(name: str, args: dict[str, Any], me: int, w: int) -> Traffic | None:
    """(sent, received) bytes of this rank in collective `name` (the op's name without its
    namespace or overload: `allreduce_`, `all_gather_into_tensor`, ...); `args` by the
    schema's argument names; `me` this rank's index in the op's group of `w` ranks. None
    when the op is not modelled here."""
    if name in NO_TRAFFIC:
        return Traffic(0.0, 0.0)
    if w <= 1:
        return Traffic(0.0, 0.0)
    if name in ("allreduce_", "allreduce_coalesced_", "all_reduce", "all_reduce_coalesced"):
        n = nbytes(args.get("tensors", args.get("input", args.get("inputs"))))
        b = 2 * (w - 1) / w * n
        return Traffic(b, b)
    if name in ("_allgather_base_", "allgather_", "allgather_coalesced_", "allgather_into_tensor_coalesced_",
                "all_gather_into_tensor", "all_gather_into_tensor_coalesced"):
        n = nbytes(args.get("input_tensor", args.get("input_tensors", args.get("input_list", args.get(
            "inputs", args.get("input"))))))
        return Traffic((w - 1) * n, (w - 1) * n)
    if name in ("_reduce_scatter_base_", "reduce_scatter_", "reduce_scatter_tensor_coalesced_"):
        n = nbytes(args.get("output_tensor", args.get("output_tensors", args.get("outputs"))))
        return Traffic((w - 1) * n, (w - 1) * n)
    if name in ("reduce_scatter_tensor", "reduce_scatter_tensor_coalesced"):
        n = nbytes(args.get("input", args.get("inputs"))) / w
        return Traffic((w - 1) * n, (w - 1) * n)
    if name == "alltoall_base_":
        return Traffic(_split_bytes(args.get("input"), args.get("input_split_sizes"), me, w),
                       _split_bytes(args.get("output"), args.get("output_split_sizes"), me, w))
    if name == "all_to_all_single":
        src = args.get("input")
        sent = _split_bytes(src, args.get("input_split_sizes"), me, w)
        out_splits = [int(s) for s in args.get("output_split_sizes") or []]
        if out_splits and src is not None and src.dim():
            row = nbytes(src) / max(src.shape[0], 1)
            recv = row * (sum(out_splits) - (out_splits[me] if me < len(out_splits) else 0))
        else:
            recv = sent
        return Traffic(sent, recv)
    if name == "alltoall_":
        outs, ins = list(args.get("output_tensors") or []), list(args.get("input_tensors") or [])
        return Traffic(sum(nbytes(t) for i, t in enumerate(ins) if i != me),
                       sum(nbytes(t) for i, t in enumerate(outs) if i != me))
    if name in ("broadcast_", "broadcast", "reduce_"):
        n = nbytes(args.get("tensors", args.get("input")))
        return Traffic(n, n)
    if name == "gather_":
        part = nbytes(args.get("input_tensors"))
        root = int(args.get("root_rank", 0))
        return Traffic(0.0, (w - 1) * part) if me == root else Traffic(part, 0.0)
    if name == "scatter_":
        part = nbytes(args.get("output_tensors"))
        root = int(args.get("root_rank", 0))
        return Traffic((w - 1) * part, 0.0) if me == root else Traffic(0.0, part)
    if name in ("send", "isend"):
        return Traffic(nbytes(args.get("tensors", args.get("tensor"))), 0.0)
    if name in ("recv_", "recv_any_source_", "irecv"):
        return Traffic(0.0, nbytes(args.get("tensors", args.get("tensor"))))
    if name == "batch_p2p_ops":
        sent = recv = 0.0
        for op, t in zip(args.get("op_list") or [], args.get("tensors") or []):
            if "send" in str(op):
                sent += nbytes(t)
            else:
                recv += nbytes(t)
        return Traffic(sent, recv)
    return None


def is_comm_namespace(namespace: str) -> bool:
    return namespace in ("c10d", "_c10d_functional", "_c10d_functional_autograd")
