"""The zero-shot prompt: what a model needs to replace a NCCL workload with symmetric memory.

The prompt is versioned and hashed. PROMPT_VERSION changes whenever the wording changes;
the hash (sha256 of the messages) is part of every kernels_cache key, so a new prompt
never replays an old answer and an unchanged one never pays twice.
"""

from __future__ import annotations

import ast
import hashlib
import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pkb_ray.generation.hardware_text import DESIGN_TARGET, hardware_section, rounded

if TYPE_CHECKING:
    from pkb_ray.engine.hardware import HardwareProfile
    from pkb_ray.problems.spec import Problem

PROMPT_VERSION = "pkb-ray-prompt-v4"
"""v4: the hardware section is measured on the evaluating node (or labelled as the design
target when it is not, or as the CPU note on cpu); the roofline uses the measured rates."""

DEFAULT_HARDWARE = DESIGN_TARGET
"""The design target's description: the hardware section when no profile is given (labelled
as not measured; generation/hardware_text.py writes the measured one)."""

# What the roofline in the prompt assumes when no node profile is given: the profile the
# harness measured on 2 x H200 (peer copy 0->1 and 1->0, device-to-device HBM copy, 8192^3
# matmuls; the device run under benchmarks/results/).
DEFAULT_PEER_GBPS = 381.0
DEFAULT_HBM_GBPS = 4066.0
DEFAULT_BF16_TFLOPS = 751.5
DEFAULT_FP32_TFLOPS = 50.8

SIGNAL_PAD_BYTES = 9216
"""torch.distributed._symmetric_memory's default signal pad per rank: 32 channels x 72
peers x one 32-bit word (`default_signal_pad_size` in torch's CUDASymmetricMemoryTypes.hpp,
torch 2.13; `symm_mem.get_signal_pad_size()` reads it at run time)."""

IMPLAUSIBLE_BELOW_ROOFLINE = 0.9
"""A correct result faster than this fraction of the roofline time is reported implausible."""


@dataclass(frozen=True)
class EvalContext:
    """The evaluation a prompt is written for. Part of the prompt's text, so of its hash:
    a prompt for world size 4 is another prompt than one for world size 2."""

    world_size: int = 2
    """Ranks, one process per GPU, all on one node."""
    device: str = "cuda"
    """cuda | cpu (gloo ranks on CPU tensors: a pipeline check, no GPU)."""
    size: str = "bench"
    """The entry of the problem's `sizes` the inputs are made at."""
    load_timeout_s: float = 180.0
    """eval.timeouts.load_s: importing the candidate, load_inline compilation included."""
    profile: HardwareProfile | None = field(default=None, hash=False)
    """The evaluating node's measured hardware profile (None: on cpu, or none could be
    measured): the prompt's hardware section and roofline are written from it."""
    inputs: tuple[tuple[str, str], ...] = ()
    """(problem id, input description) pairs computed once by the driver (`with_inputs`), so
    generation actors never build a data-dependent problem's tensors themselves; a problem
    missing here is described on demand (the same text)."""

    def with_inputs(self, problems: dict[str, Problem]) -> "EvalContext":
        """This context with every problem's input description filled in."""
        import dataclasses

        texts = tuple((pid, _inputs_text(p, self)) for pid, p in problems.items())
        return dataclasses.replace(self, inputs=texts)

SYSTEM = """\
You are an expert CUDA and PyTorch distributed-systems engineer. You rewrite multi-GPU \
PyTorch workloads so that GPUs exchange data directly over NVLink through symmetric \
memory, with custom CUDA (or Triton) kernels and no NCCL collectives, and you make them \
as fast as the hardware allows while staying numerically correct."""

SYMM_MEM_API = f"""\
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
  words, zero-initialised; {SIGNAL_PAD_BYTES} bytes per rank by default, i.e. 32
  channels x 72 peers) for your own flags and barriers inside kernels. Use
  system-scope atomics / `ld.acquire.sys` / `st.release.sys` for cross-GPU flags and
  leave every flag as you found it (reset to 0) at the end of a call.
- `handle.barrier(channel=0)`: a barrier across all ranks on the current stream; channel c
  uses the signal-pad words of channel c (no NCCL). `put_signal` / `wait_signal` use the
  same words: do not mix them with your own flags at the same offsets.
- The harness itself uses none of your symmetric memory, signal pads or barrier channels:
  every channel is yours. Your symmetric buffers live as long as your process (one
  process per rank for all calls of one evaluation).
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
  call and per rank) and checks every rank's output on several of them, including timed
  calls chosen in secret: never return a result computed for earlier inputs, and never
  skip work.
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

Faster versions replace the two full barriers with per-peer signals (put_signal /
wait_signal, or flags in the signal pad written by your kernel), fuse the staging copy
into the kernel that exchanges the data, and do the peer reads in a CUDA kernel with
16-byte vector loads spread over many thread blocks. The input itself is never in
symmetric memory (see "Inputs and outputs"): one copy into your buffer is the least any
candidate pays.'''

INPUTS_CONTRACT = """\
## Inputs and outputs: what you may assume

- Inputs are plain tensors in memory the harness owns, never in symmetric memory: a peer
  cannot read them directly. Copy what peers need into your own symmetric buffers.
- Their contents change on every call (fresh random values per call and per rank); a
  buffer address may repeat across calls, its contents do not. Never cache results.
- Do not modify inputs: they are checked after every call.
- Return new tensors: not an input, not a view of one, and not a view of a buffer you
  write again on a later call (the harness may hold outputs of several calls at once)."""


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


def _solution_args(source: str) -> list[str]:
    """Positional argument names of the reference's `solution`, for the input listing."""
    try:
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.FunctionDef) and node.name == "solution":
                return [a.arg for a in node.args.posonlyargs + node.args.args]
    except SyntaxError:
        pass
    return []


def _problem_section(problem: Problem) -> str:
    s = problem.spec
    lines = [
        f"## The problem: {s.title} (`{s.id}`)",
        "",
        f"Category: {s.category}. Parallelism: {s.parallelism}. Drawn from: {s.origin}. "
        f"Dtype: {s.dtype}.",
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


def _roofline_line(problem: Problem, ctx: EvalContext) -> str:
    """The least time the hardware allows for these inputs, with the counts it comes from."""
    if ctx.device != "cuda":
        return "No roofline on CPU: a CPU evaluation checks correctness, not GPU speed."
    counts = problem.roofline(ctx.world_size, ctx.size) if ctx.size in problem.spec.sizes else None
    if counts is None:
        return "This problem gives no roofline counts."
    from pkb_ray.engine.hardware import HardwareProfile
    from pkb_ray.engine.roofline import roofline_ms

    if ctx.profile is not None:
        profile = rounded(ctx.profile)  # the figures the hardware section states
        where = "measured on this node"
    else:
        peers = {f"{i}->{j}": DEFAULT_PEER_GBPS for i in range(ctx.world_size)
                 for j in range(ctx.world_size) if i != j}
        profile = HardwareProfile(fingerprint="prompt-default", peer_bw_gbps=peers,
                                  hbm_bw_gbps=DEFAULT_HBM_GBPS, bf16_tflops=DEFAULT_BF16_TFLOPS,
                                  fp32_tflops=DEFAULT_FP32_TFLOPS)
        where = "measured on 2 x H200, the design target"
    dtype = str(problem.spec.sizes[ctx.size].get("dtype", problem.spec.dtype))
    floor_ms = roofline_ms(counts, profile, ctx.world_size, dtype)
    parts = [f"{counts.nvlink_bytes_per_rank / 1e6:.3g} MB over NVLink",
             f"{counts.hbm_bytes_per_rank / 1e6:.3g} MB of HBM traffic",
             f"{counts.flops_per_rank / 1e9:.3g} GFLOP"]
    if floor_ms is None:
        return "Roofline: the busiest rank must move " + ", ".join(parts) + "."
    peer = profile.min_peer_bw_gbps(ctx.world_size) or 0.0
    return (f"Roofline: the busiest rank must move {', '.join(parts)}; at {peer:g} GB/s "
            f"per peer link (the slowest), {profile.hbm_bw_gbps / 1000:.2f} TB/s HBM and "
            f"{profile.bf16_tflops:g} bf16 / {profile.fp32_tflops:g} fp32 TFLOPS ({where}) "
            f"that takes at least {floor_ms * 1000:.3g} us per call. Your time "
            f"is reported as a fraction of it; a correct result faster than "
            f"{IMPLAUSIBLE_BELOW_ROOFLINE:g} x this bound is reported as implausible, not fast.")


def _inputs_text(problem: Problem, ctx: EvalContext) -> str:
    from pkb_ray.generation.shapes import describe_inputs

    return describe_inputs(problem, ctx.world_size, ctx.size, _solution_args(problem.reference_source))


def _evaluation_section(problem: Problem, ctx: EvalContext) -> str:
    """What this evaluation is: world size and node, the real input shapes, tolerance,
    roofline and the load limit."""
    s = problem.spec
    links = ("every pair of those GPUs joined by NVLink" if ctx.profile is None else
             "linked as listed under Hardware")
    where = (f"one node: {ctx.world_size} processes, one per GPU, ranks 0..{ctx.world_size - 1}, "
             f"{links}" if ctx.device == "cuda" else
             f"one CPU machine: {ctx.world_size} processes (gloo, CPU tensors; no symmetric memory)")
    also = [w for w in s.world_sizes if w != ctx.world_size]
    params = s.sizes.get(ctx.size, {})
    inputs = dict(ctx.inputs).get(s.id) or _inputs_text(problem, ctx)
    lines = [
        "## This evaluation",
        "",
        f"- World size {ctx.world_size}, on {where}."
        + (f" (The problem is also defined for world sizes {', '.join(map(str, also))}; only "
           f"{ctx.world_size} is evaluated here.)" if also else ""),
        f"- Inputs at the `{ctx.size}` size ({json.dumps(params, sort_keys=True)}), exactly as "
        "`solution` receives them:",
        inputs or "  - (no arguments)",
        f"- Tolerance: every rank's output within atol={s.atol:g}, rtol={s.rtol:g} of the "
        "reference's (torch.allclose semantics).",
        f"- {_roofline_line(problem, ctx)}",
        f"- Importing your module, any load_inline compilation included, must finish within "
        f"{ctx.load_timeout_s:g} s (a cold load_inline of a small kernel takes about 48 s "
        "there; keep to one extension).",
    ]
    return "\n".join(lines)


def _precision_note(problem: Problem) -> str:
    s = problem.spec
    why = f" ({s.tolerance_reason.strip()})" if s.tolerance_reason else ""
    return (
        "## Precision\n\n"
        f"The tolerance above is atol={s.atol:g}, rtol={s.rtol:g} in {s.dtype}{why}. Summation "
        "order may differ from the reference's; accumulate reduced-precision sums "
        "(bf16/fp16) in fp32 and round once at the end, or the error grows with the world size."
    )


def build_prompt(problem: Problem, hardware: str | None = None,
                 context: EvalContext | None = None) -> Prompt:
    """The chat messages for one problem and one evaluation (`context`; default: world
    size 2 on cuda at the bench size). `hardware`: the hardware section as text, which
    overrides the one written from the context (`hardware_section`: the measured profile,
    else the labelled design target, or the CPU note)."""
    ctx = context or EvalContext()
    hw = (hardware or hardware_section(ctx.profile, ctx.world_size, ctx.device)).strip()
    user = "\n\n".join([
        "Rewrite the following multi-GPU PyTorch workload so that it uses no NCCL: move "
        "data between GPUs yourself through symmetric memory over NVLink, with custom "
        "kernels, and make it as fast as you can while staying correct.",
        _problem_section(problem),
        _evaluation_section(problem, ctx),
        INPUTS_CONTRACT,
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
