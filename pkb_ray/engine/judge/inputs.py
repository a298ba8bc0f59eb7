"""Inputs from the evaluation's secret, placed in the arena; outputs read back from it.

Every input this judge makes comes from a seed drawn from the evaluation's secret (the
node draws it with os.urandom for each evaluation and it never reaches a worker), in the
same order on every judge, so the ranks' inputs fit together and a worker cannot
regenerate any of them. The golden copy stays in the judge's own memory: after each run
the arena's inputs are compared with it bit for bit.
"""

from __future__ import annotations

import copy
import hashlib
import random
from dataclasses import dataclass, field
from typing import Any

import torch

from pkb_ray.engine.judge import comparator
from pkb_ray.engine.wire import trees
from pkb_ray.engine.wire.arena import ALIGN, Arena, Layout, align_up, fill
from pkb_ray.engine.wire.frames import ProtocolError


class _KeyedStream(random.Random):
    """random.Random's methods over a keyed BLAKE2b in counter mode: BLAKE2b(key, stream,
    counter) gives each 64 bits. Unlike the Mersenne Twister (whose state 624 outputs reveal,
    and whose next outputs follow), no number of outputs tells the key or the next output.
    hashlib's BLAKE2b rather than a hand-written generator: a PRF is what is needed, and
    the standard library has one."""

    def __init__(self, key: bytes, stream: bytes) -> None:
        self._key, self._stream, self._counter = key, stream, 0
        super().__init__(0)

    def seed(self, *args: object, **kwargs: object) -> None:  # random.Random.__init__ calls it
        pass

    def _next64(self) -> int:
        self._counter += 1
        block = hashlib.blake2b(self._stream + self._counter.to_bytes(8, "little"), key=self._key,
                                digest_size=8).digest()
        return int.from_bytes(block, "little")

    def getrandbits(self, k: int) -> int:
        out, have = 0, 0
        while have < k:
            out |= self._next64() << have
            have += 64
        return out & ((1 << k) - 1)

    def random(self) -> float:
        return (self._next64() >> 11) * (1.0 / (1 << 53))

    def getstate(self) -> object:
        raise NotImplementedError("a keyed stream has no state to hand out")

    def setstate(self, state: object) -> None:
        raise NotImplementedError("a keyed stream has no state to set")


class Secrets:
    """Per-evaluation random choices, identical on every judge (same seed, same order).

    The evaluation's seed (62 bits from os.urandom, drawn by the node) is a key, never a
    generator's state: each input set's seed and each choice of checked call come from a
    keyed BLAKE2b stream, so a candidate that recovers one input set's seed from its inputs
    (a problem's input maker seeds torch's Mersenne Twister with it) learns nothing about
    the next input set or about which calls are checked."""

    def __init__(self, seed: int) -> None:
        key = seed.to_bytes(16, "little", signed=False)
        self._inputs = _KeyedStream(key, b"inputs")
        self._checks = _KeyedStream(key, b"checks")

    def input_seed(self) -> int:
        # 31 bits: problems' input makers scale it (seed * 1_000_003 + rank) into
        # torch.manual_seed, which takes at most 64 bits.
        return self._inputs.randrange(1 << 31)

    def check_rng(self) -> random.Random:
        return self._checks


def clone(x: Any) -> Any:
    if isinstance(x, torch.Tensor):
        return x.clone()
    if isinstance(x, torch.nn.Module):
        # a reference that steps a layer it is handed must step a copy: the same object
        # wrote the judge's golden layer and hid the write (adversarial skips_layer_update.py)
        return copy.deepcopy(x)
    if isinstance(x, (list, tuple)):
        return type(x)(clone(v) for v in x)
    if isinstance(x, dict):
        return {k: clone(v) for k, v in x.items()}
    return x


def _span_bytes(t: torch.Tensor) -> int:
    """Bytes from a tensor's first element to its last as its strides lay them out (what
    place() copies: a strided argument keeps its strides in the arena)."""
    span = 1 + sum((d - 1) * s for d, s in zip(t.shape, t.stride())) if t.numel() else 0
    return max(span, 1) * t.element_size()


def call_bytes(trials: list[tuple[Any, Any]]) -> int:
    """Arena bytes one timed call may take, from the trials' (arguments, expected outputs):
    the largest trial's layout (each leaf as place() and slots_for() lay it out, strided spans
    and alignment counted), and half again. Timed calls get fresh inputs each sample, and a
    data-dependent size no trial showed must still fit: sized exactly, a lookup whose one
    seed in eight has 64x the ids fills the arena and fails the reference against itself."""
    def layout(args: Any, expected: Any) -> int:
        leaves = [_span_bytes(t) for t in trees.tensor_leaves(args, True)]
        leaves += [t.numel() * t.element_size() for t in trees.tensor_leaves(expected)]
        return sum(align_up(max(n, 1)) for n in leaves)

    return int(max(layout(a, e) for a, e in trials) * 1.5) + ALIGN


@dataclass
class Placed:
    """One call's arguments in the arena and what the worker is told about them."""
    tree: Any
    pairs: list[tuple[torch.Tensor, torch.Tensor]] = field(default_factory=list)
    """(arena view, golden tensor) for every tensor argument."""

    def changed_arguments(self) -> int:
        return sum(not _same_bits(v, g) for v, g in self.pairs)

    def not_as_written(self, written: "Written", atol: float, rtol: float) -> str:
        """'' where every tensor argument is as the reference leaves its own, else why not:
        bit for bit where it writes nothing, within the tolerance where it writes."""
        if not written.any:
            n = self.changed_arguments()
            return f"the candidate modified {n} of its input tensor(s); inputs must be left as they are" if n else ""
        bad = 0
        for (view, gold), after in zip(self.pairs, written.after):
            if after is None:
                bad += not _same_bits(view, gold)
            else:
                bad += not comparator.compare(view.to(after.device), after, atol, rtol).ok
        return (f"{bad} of its input tensor(s) differ from what the reference leaves in them (it writes "
                f"{sum(a is not None for a in written.after)} of them in place)") if bad else ""


@dataclass(frozen=True)
class Written:
    """What a reference leaves in its own tensor arguments: for each (in place()'s order) its
    value after the call where the reference wrote it, else None. Upstream PKB references
    answer in place as well as by returning (21 and 22 clip the gradients they are handed,
    30 and 73 write into theirs): a candidate must leave the same there."""
    after: tuple[torch.Tensor | None, ...] = ()

    @property
    def any(self) -> bool:
        return any(a is not None for a in self.after)

    @property
    def leaves(self) -> frozenset[int]:
        return frozenset(i for i, a in enumerate(self.after) if a is not None)


def handed(args: Any) -> list[torch.Tensor]:
    """The tensors a call is handed, in place()'s order: taken before the call, for written_by."""
    return trees.tensor_leaves(args, args=True)


def written_by(before: Any, after: Any, handed: list[torch.Tensor]) -> Written:
    """What a call that was handed `after` (a clone of `before`, the call's own: kept, not
    copied again) wrote into it. `handed`: the tensors the call was handed, taken from `after`
    before the call (handed()). A call that rebinds an item of a list it was handed
    (`xs[0] = xs[0] * 2`) wrote nothing into the tensor that was there, which is all a worker's
    caller can see: only the memory of the tensors handed over is compared, not what the
    containers hold afterwards (an honest reference that rebinds read as writing, and failed
    against itself)."""
    if _shape_of(after) != _shape_of(before):
        # the pairs below would misalign (an argument appended, a key added, a tensor
        # replaced by one of another shape), and a worker's own list or dict never reaches
        # the judge: what a candidate must leave there cannot be said
        raise ValueError("the reference changes the structure of its arguments (not only tensor values "
                         "in place): such a problem cannot be judged")
    b = trees.tensor_leaves(before, args=True)
    out = tuple(None if _same_bits(x, y) else x.detach() for x, y in zip(handed, b))
    return Written(out if any(t is not None for t in out) else ())


def _shape_of(args: Any) -> Any:
    """The arguments' tree with each tensor leaf as its shape and dtype, every other value as
    it is (a changed Python number is a changed structure too)."""
    try:
        return trees.encode(args, lambda t: [list(t.shape), trees.dtype_name(t.dtype)])
    except ValueError as e:
        return f"unencodable: {e}"


def first_changed(placed: list[Placed], written: frozenset[int] = frozenset()) -> int | None:
    """The index of the first call whose arguments differ from what was placed, or None: every
    comparison queued, then one wait for all of them (a wait per call was ten per sample of
    the allreduce expert at 8192x8192). `written`: the tensor arguments (place()'s order) the
    reference writes, left out (the call checked in secret compares them with its writes)."""
    flags = [_differs(view, gold) if i not in written else torch.zeros((), dtype=torch.bool, device=gold.device)
             for p in placed for i, (view, gold) in enumerate(p.pairs)]
    if not flags:
        return None
    bad = torch.stack(flags).tolist()
    i = 0
    for j, p in enumerate(placed):
        if any(bad[i:i + len(p.pairs)]):
            return j
        i += len(p.pairs)
    return None


def _differs(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """A 0-d bool tensor on b's device: whether a and b differ in shape or in any bit."""
    if a.device != b.device:
        a = a.to(b.device)
    if a.shape != b.shape or a.dtype != b.dtype:
        return torch.ones((), dtype=torch.bool, device=b.device)
    if not a.numel():
        return torch.zeros((), dtype=torch.bool, device=b.device)
    if a.dtype == torch.bool:
        return (a != b).any()
    a, b = a.contiguous().reshape(-1).view(torch.uint8), b.contiguous().reshape(-1).view(torch.uint8)
    word = _word(a, b)
    x, y = (a, b) if word is None else (a.view(word), b.view(word))
    # In slices: a whole-tensor `!=` makes a bool per word, and per byte it made a 26.5 GiB
    # one for upstream 68's 26.5 GiB table, which ran the GPU out of memory.
    flags = [(x[i:i + _SLICE] != y[i:i + _SLICE]).any() for i in range(0, x.numel(), _SLICE)]
    return flags[0] if len(flags) == 1 else torch.stack(flags).any()


_SLICE = 1 << 25


def _word(a: torch.Tensor, b: torch.Tensor) -> torch.dtype | None:
    """The widest integer that two byte tensors of one length can both be viewed as (bits
    compared as they are: -0.0 is not 0.0, and a NaN's payload counts); None: bytes. Both
    sides take the same one: a slice of an argument starts where the arena's copy does not."""
    for dtype, n in ((torch.int64, 8), (torch.int32, 4), (torch.int16, 2)):
        if a.numel() % n == 0 and a.data_ptr() % n == 0 and b.data_ptr() % n == 0:
            return dtype
    return None


def _same_bits(a: torch.Tensor, b: torch.Tensor) -> bool:
    return not bool(_differs(a, b))


def place(args: tuple, arena: Arena, layout: Layout) -> Placed:
    placed = Placed(None)

    def tensor(t: torch.Tensor) -> dict:
        t = t.detach()
        off = layout.alloc(_span_bytes(t))
        view = arena.view(off, t.dtype, list(t.shape), list(t.stride()))
        fill(view, t)
        placed.pairs.append((view, t))
        return {"off": off, "dtype": trees.dtype_name(t.dtype), "shape": list(t.shape), "stride": list(t.stride())}

    placed.tree = trees.encode(args, tensor)
    return placed


@dataclass
class Slots:
    """Where a call's outputs go: one contiguous slot per tensor of the expected output."""
    descs: list[dict]


def slots_for(expected: Any, arena: Arena, layout: Layout) -> Slots:
    descs = []
    for t in trees.tensor_leaves(expected):
        off = layout.alloc(t.numel() * t.element_size())
        descs.append({"off": off, "dtype": trees.dtype_name(t.dtype), "shape": list(t.shape)})
    return Slots(descs)


def rebuild(tree: Any, slots: Slots, expected: Any, arena: Arena) -> Any:
    """The candidate's output as the judge sees it: tensors from the arena's slots, never
    from anything the worker claims about values."""
    trees.check_tree(tree)
    exp_leaves = trees.tensor_leaves(expected)

    def tensor(p: dict) -> Any:
        i = p.get("slot")
        if not isinstance(i, int) or isinstance(i, bool) or not 0 <= i < len(slots.descs):
            return trees.Mismatch(f"beyond the {len(slots.descs)} tensor(s) the reference returns")
        s = slots.descs[i]
        if p.get("plain") is not True:
            return trees.Mismatch("that is a torch.Tensor subclass, expected a plain Tensor")
        if p.get("shape") != s["shape"]:
            return trees.Mismatch(f"of shape {p.get('shape')}, expected {s['shape']}")
        if p.get("dtype") != s["dtype"]:
            return trees.Mismatch(f"of dtype {p.get('dtype')}, expected {s['dtype']}")
        want = str(exp_leaves[i].device)
        if p.get("device") != want:
            return trees.Mismatch(f"on device {p.get('device')}, expected {want}")
        if p.get("copied") is not True:
            return trees.Mismatch("that the worker did not hand back")
        view = arena.view(s["off"], trees.dtype_of(s["dtype"]), s["shape"])
        # on the reference's device: a host output of a CUDA problem (upstream 26 returns
        # its counts on the CPU) was moved to the GPU here, then refused as on the wrong one
        return view.to(want) if str(view.device) != want else view

    try:
        return trees.decode(tree, tensor)
    except (KeyError, TypeError, ValueError) as e:
        raise ProtocolError(f"malformed output tree: {e}") from e
