"""The zero-shot prompt: what a model needs to replace a NCCL workload with symmetric memory.

The prompt is versioned and hashed. PROMPT_VERSION changes whenever the wording changes;
the hash (sha256 of the messages) is part of every kernels_cache key, so a new prompt
never replays an old answer and an unchanged one never pays twice.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pkb_ray.problems.spec import Problem

PROMPT_VERSION = "pkb-ray-prompt-v2"

DEFAULT_HARDWARE = """\
One node of NVIDIA H200 GPUs (141 GB HBM3e each, about 4.8 TB/s HBM bandwidth, compute
capability 9.0, 132 SMs), 2 or 8 per node, all pairs joined by NVLink (NV18: 18 links,
about 478 GB/s per direction between two GPUs; a measured peer-read copy reaches about
365 GB/s). Peer access between all GPUs works. NVLink multicast (NVLS) is disabled:
`multicast_ptr`, multimem instructions and cuMulticastCreate are NOT available.
Software: PyTorch 2.11 with CUDA 13.0."""

SYSTEM = """\
You are an expert CUDA and PyTorch distributed-systems engineer. You rewrite multi-GPU \
PyTorch workloads so that GPUs exchange data directly over NVLink through symmetric \
memory, with custom CUDA (or Triton) kernels and no NCCL collectives, and you make them \
as fast as the hardware allows while staying numerically correct."""

SYMM_MEM_API = """\
## The symmetric-memory API (torch.distributed._symmetric_memory, imported as symm_mem)

- `buf = symm_mem.empty(shape, dtype=..., device=...)`: allocate a tensor in symmetric
  memory (every rank allocates the same shape and dtype, in the same order).
- `handle = symm_mem.rendezvous(buf, dist.group.WORLD)`: exchange the allocation with all
  ranks; returns the handle below. Rendezvous is expensive (it exchanges handles
  between processes): allocate and rendezvous once per shape and reuse the buffer across calls (cache it in a module dict).
- `handle.rank`, `handle.world_size`: this rank and the number of ranks.
- `handle.buffer_ptrs`: list of int device addresses, one per rank, of the symmetric
  buffer (peer pointers usable directly inside kernels on this GPU: loads/stores go over
  NVLink). `handle.buffer_ptrs_dev`: the same as a device array of int64 (uint64_t*).
- `handle.signal_pad_ptrs` / `handle.signal_pad_ptrs_dev`: per-rank signal pads (uint32
  words, zero-initialised) for your own flags and barriers inside kernels. Use
  system-scope atomics / `ld.acquire.sys` / `st.release.sys` for cross-GPU flags and
  leave every flag as you found it (reset to 0) at the end of a call.
- `handle.barrier(channel=0)`: a barrier across all ranks on the current stream (uses
  signal pads; no NCCL).
- `handle.get_buffer(rank, shape, dtype, storage_offset=0)`: a tensor view of rank
  `rank`'s symmetric buffer; torch ops on a peer's view read/write over NVLink.
- `handle.put_signal(dst_rank, channel=0)` / `handle.wait_signal(src_rank, channel=0)`:
  point-to-point signalling on the current stream.
- CUDA kernels: `torch.utils.cpp_extension.load_inline(...)` (compile once per process;
  pass pointers from `buffer_ptrs`/`buffer_ptrs_dev` as int64 arguments), or Triton.
- NOT available: NVLink multicast (`handle.multicast_ptr`, multimem.*, NVLS)."""

RULES = """\
## Rules (the harness enforces them)

- Do not call torch.distributed collectives or point-to-point ops (all_reduce, all_gather,
  all_gather_into_tensor, reduce_scatter, reduce_scatter_tensor, broadcast, all_to_all,
  send/recv, isend/irecv, dist.barrier, ...), NCCL, or torch.ops.symm_mem / c10d
  prebuilt collective ops: they run under a guard that fails the candidate. Write the
  communication yourself with symmetric memory and your own kernels.
- `solution(...)` keeps the reference's signature and returns what the reference
  returns (same shapes, dtypes and devices, on every rank). It is called on every rank,
  one process per GPU, after the process group exists (its backend may not be NCCL).
- The harness calls `solution` many times with fresh random inputs (different values per
  call and per rank) and checks every rank's output on several of them, including a
  timed call: never return a result computed for earlier inputs, and never skip work.
- Time of one call = the slowest rank's GPU time. Each timed call is queued on every rank
  behind a gate that starts all GPUs together (short calls run back to back), so host
  launch overhead does not count; work on side streams does. Code that waits on the GPU
  from the host inside `solution` (`.item()`, a synchronize) or makes its own CUDA
  streams is timed without the gate, its host time included. Speedup = reference time /
  your time.
- Do not read files, spawn processes, or talk to the network."""

WORKED_EXAMPLE = '''\
## A worked example (a different, simpler problem)

Problem: every rank holds `x` (any dtype and shape); return the `x` of the previous rank,
`(rank - 1) % world_size` (a ring shift, as in pipeline send/recv). A correct candidate
with symmetric memory and no NCCL:

```python
import torch
import torch.distributed as dist
import torch.distributed._symmetric_memory as symm_mem

_buffers = {}  # (shape, dtype, device) -> (buffer, handle): rendezvous once, then reuse


def _symmetric(shape, dtype, device):
    key = (tuple(shape), dtype, str(device))
    if key not in _buffers:
        buf = symm_mem.empty(shape, dtype=dtype, device=device)
        _buffers[key] = (buf, symm_mem.rendezvous(buf, dist.group.WORLD))
    return _buffers[key]


def solution(x: torch.Tensor) -> torch.Tensor:
    buf, handle = _symmetric(x.shape, x.dtype, x.device)
    buf.copy_(x)
    handle.barrier(channel=0)  # every rank's buffer is written before anyone reads it
    src = (handle.rank - 1) % handle.world_size
    out = handle.get_buffer(src, x.shape, x.dtype).clone()  # one peer read over NVLink
    handle.barrier(channel=0)  # nobody overwrites its buffer while a peer still reads it
    return out
```

Faster versions drop the staging copy where the input can live in symmetric memory,
replace the two full barriers with per-peer signals (put_signal / wait_signal or flags in
the signal pad written by your kernel), and do the peer reads in a CUDA kernel with
16-byte vector loads spread over many thread blocks.'''


OUTPUT_FORMAT = """\
## Output format

Think as long as you need, then answer with exactly ONE fenced code block tagged `python`
holding the complete module: imports, any CUDA source passed to load_inline, helpers, and
`def solution(...)` with the reference's signature. The first ```python block that
defines `solution(` is taken as your answer; nothing outside it is run."""


@dataclass(frozen=True)
class Prompt:
    """A built prompt: the chat messages, the same as one text, its version and hash."""

    messages: list[dict[str, str]]
    text: str
    version: str
    hash: str


def messages_hash(messages: list[dict[str, Any]]) -> str:
    """sha256 over the canonical JSON of the messages (role and content, in order)."""
    canon = json.dumps([{"role": m["role"], "content": m["content"]} for m in messages],
                       sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canon.encode()).hexdigest()


def _problem_section(problem: Problem) -> str:
    s = problem.spec
    sizes = s.sizes.get("bench") or next(iter(s.sizes.values()), {})
    lines = [
        f"## The problem: {s.title} (`{s.id}`)",
        "",
        f"Category: {s.category}. Parallelism: {s.parallelism}. Drawn from: {s.origin}.",
        f"World sizes: {', '.join(str(w) for w in s.world_sizes)} GPUs. Dtype: {s.dtype}.",
        f"Benchmark size parameters: {json.dumps(sizes, sort_keys=True)}.",
    ]
    if s.description:
        lines += ["", s.description.strip()]
    lines += [
        "",
        "The reference implementation (PyTorch + torch.distributed over NCCL). Replace it:",
        "",
        "```python",
        problem.reference_source.rstrip(),
        "```",
    ]
    return "\n".join(lines)


def _precision_note(problem: Problem) -> str:
    s = problem.spec
    return (
        "## Precision\n\n"
        f"Every rank's output must match the reference within atol={s.atol:g}, "
        f"rtol={s.rtol:g} (torch.allclose semantics, in {s.dtype}). Summation order may "
        "differ from the reference's; accumulate reduced-precision sums (bf16/fp16) in "
        "fp32 and round once at the end, or the error grows with the world size."
    )


def build_prompt(problem: Problem, hardware: str | None = None) -> Prompt:
    """The chat messages for one problem. `hardware` is the node's measured profile as
    text; None uses the default H200 NVLink description."""
    hw = (hardware or DEFAULT_HARDWARE).strip()
    user = "\n\n".join([
        "Rewrite the following multi-GPU PyTorch workload so that it uses no NCCL: move "
        "data between GPUs yourself through symmetric memory over NVLink, with custom "
        "kernels, and make it as fast as you can while staying correct.",
        _problem_section(problem),
        SYMM_MEM_API,
        RULES,
        "## Hardware\n\n" + hw,
        _precision_note(problem),
        WORKED_EXAMPLE,
        OUTPUT_FORMAT,
    ])
    messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]
    text = "\n\n".join(f"[{m['role']}]\n{m['content']}" for m in messages)
    return Prompt(messages=messages, text=text, version=PROMPT_VERSION,
                  hash=messages_hash(messages))
