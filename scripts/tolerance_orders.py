"""How far two legitimate summation orders of a problem's cross-rank sums move its output.

The judge holds a candidate to |cand - ref| <= atol + rtol |ref| on every element of every
rank's output. NCCL rounds to the dtype at every hop of its ring (or tree), so the reference's
own result depends on the order it happened to sum in, and an NCCL-free candidate (a one-shot
sum in fp32, a ring started elsewhere) rounds differently. In bf16 the difference scales with
the ulp of the largest partial sum, not of the result, so it lands in atol, not rtol.

This runs each problem's reference on CPU with ranks as threads and torch.distributed replaced
by an in-process world whose SUM (all_reduce, reduce_scatter, reduce; AVG as SUM then divide)
adds the ranks' contributions in a chosen order, rounding to the dtype after every addition:

    ringK    start at group member K, add K+1, K+2, ... (NCCL's ring from each rank)
    revK     start at K, add K-1, K-2, ...
    tree     pairwise halving ((c0+c1)+(c2+c3))+...
    fp32     exact (float64) sum, rounded once (what a fused one-shot kernel does)

For every ordered pair (reference order B, candidate order A), every seed and every rank it
records the atol the check needs at the problem's rtol: max(|A - B| - rtol |B|) over elements.
MAX/MIN and gathers are exact. Problems that use point-to-point ops are not run.

    PYTHONPATH=. python3 scripts/tolerance_orders.py [PROBLEM ...] [--world-sizes 2,4,8]
        [--seeds 3] [--size bench|small|measure] [--write]

`--size measure` (the default) takes the MEASURE entry below where there is one (the bench
shape scaled down so 2 CPU cores finish; the dtype stays the problem's), else the bench size.
`--write` writes benchmarks/results/tolerance_orders.md with the command.
"""

from __future__ import annotations

import argparse
import math
import sys
import threading
import time
from pathlib import Path

import torch
import torch.distributed as dist

from pkb_ray.problems import args as tree
from pkb_ray.problems.loader import load_problem

REPO = Path(__file__).resolve().parent.parent

# Problems with a SUM (or AVG) across ranks in low precision or with a tight fp32 tolerance.
DEFAULT = (
    "allreduce", "reduce_scatter", "reduce_to_root", "ddp_bucket_allreduce", "fsdp_grad_reduce_scatter",
    "fp8_grad_reduce_scatter", "moe_lora_grad_allreduce", "layernorm_weight_grad_allreduce",
    "gemm_allreduce", "gemm_reduce_scatter", "tp_mlp", "allgather_silu_mlp_reduce_scatter",
    "conv3d_channel_parallel_allreduce", "fsdp_tp_swiglu_mlp", "reduce_scatter_rmsnorm", "rs_layernorm",
    "tp_rmsnorm_sharded_hidden", "sync_batchnorm", "ep_clip_grad_norm", "fsdp_clip_grad_norm",
    "muon_newton_schulz_tp", "vocab_parallel_cross_entropy", "importance_sampling_loss",
    "kimi_delta_attention_cp_tp", "int8_quantized_grad_allreduce", "grad_norm_clip",
    "grad_accum_loss_normalize", "ddp_mlp_adam_step", "zero1_mlp_adam_step", "zero2_mlp_adam_step",
    "fsdp_mlp_adamw_step", "sinkhorn_knopp_allreduce", "moe_load_balancing_loss", "grpo_loss",
    "kalman_filter_update", "vocab_parallel_embedding",
)

# Bench shapes scaled down for 2 CPU cores; the element count of the summed tensors stays
# around a million where the bench has more, since the worst element is a tail statistic.
MEASURE = {
    "allreduce": {"rows": 1024, "cols": 1024},
    "reduce_scatter": {"rows": 256, "cols": 1024},
    "reduce_to_root": {"rows": 1024, "cols": 1024},
    "ddp_bucket_allreduce": {"shapes": [[1024, 1024], [1024], [512, 1024]]},
    "fsdp_grad_reduce_scatter": {"shard_shapes": [[256, 1024], [128, 1024], [64, 1024]]},
    "fp8_grad_reduce_scatter": {"shard": 262144, "history": 16},
    "moe_lora_grad_allreduce": {"experts": 8, "rank": 16, "hidden": 2048},
    "gemm_allreduce": {"m": 512, "k_local": 256, "n": 1024},
    "gemm_reduce_scatter": {"m_local": 128, "k_local": 256, "n": 1024},
    "tp_mlp": {"m": 512, "h": 1024, "f_local": 256},
    "allgather_silu_mlp_reduce_scatter": {"m": 512, "h": 1024, "f": 1024},
    "conv3d_channel_parallel_allreduce": {"batch": 1, "c_in": 64, "c_out": 64, "t": 6, "h": 18, "w": 18,
                                          "kernel": 3, "stride": 1, "padding": 0, "dilation": 1},
    "fsdp_tp_swiglu_mlp": {"tokens": 256, "d_model": 512, "d_ff": 1024},
    "reduce_scatter_rmsnorm": {"tokens": 1024, "hidden": 1024},
    "rs_layernorm": {"s_local": 128, "h": 1024},
    "layernorm_weight_grad_allreduce": {"rows": 2048, "hidden": 1024},
    "tp_rmsnorm_sharded_hidden": {"tokens": 512, "hidden": 2048, "eps": 1e-05},
    "sync_batchnorm": {"n": 8, "c": 64, "h": 32, "w": 32},
    "ep_clip_grad_norm": {"non_ep_numels": [262144, 4096], "ep_numels": [524288, 131072]},
    "fsdp_clip_grad_norm": {"numels": [262144, 524288, 4096]},
    "muon_newton_schulz_tp": {"rows": 256, "cols": 1024, "steps": 5},
    "vocab_parallel_cross_entropy": {"tokens": 1024, "vocab_local": 2048},
    "importance_sampling_loss": {"tokens": 256, "hidden": 512, "vocab": 4096},
    "int8_quantized_grad_allreduce": {"numel": 1048576, "block_size": 128},
    "grad_norm_clip": {"shard_numels": [524288, 262144, 4096], "max_norm": 1.0},
    "grad_accum_loss_normalize": {"slots": 524288, "max_tokens": 512},
    "ddp_mlp_adam_step": {"batch": 256, "d_in": 256, "hidden": 1024, "d_out": 256},
    "zero1_mlp_adam_step": {"batch": 256, "d_in": 256, "hidden": 1024, "d_out": 256},
    "zero2_mlp_adam_step": {"batch": 256, "d_in": 256, "hidden": 1024, "d_out": 256},
    "fsdp_mlp_adamw_step": {"batch": 256, "d_in": 256, "hidden": 1024, "d_out": 256},
    "moe_load_balancing_loss": {"layers": 4, "batch": 2, "seq": 1024, "experts": 64, "top_k": 6},
    "grpo_loss": {"groups": 32, "samples_local": 8, "tokens": 1024},
    "vocab_parallel_embedding": {"tokens": 1024, "vocab_local": 2048, "hidden": 512},
}


# ----------------------------------------------------------------------------- the sums

def orders(n: int) -> list[str]:
    """Every ring start, the reversed ring from 0, a tree and one rounding, for n members."""
    names = [f"ring{k}" for k in range(n)] + (["rev0"] if n > 2 else []) + (["tree"] if n > 2 else []) + ["fp32"]
    return names


def ordered_sum(parts: list[torch.Tensor], order: str) -> torch.Tensor:
    """The sum of `parts` (same shape and dtype) in `order`, rounded to the dtype after every
    addition (fp32: once)."""
    n = len(parts)
    if order == "fp32":
        acc = parts[0].double()
        for p in parts[1:]:
            acc = acc + p.double()
        return acc.to(parts[0].dtype)
    if order == "tree":
        level = list(parts)
        while len(level) > 1:
            level = [level[i] + level[i + 1] if i + 1 < len(level) else level[i] for i in range(0, len(level), 2)]
        return level[0]
    step = 1 if order.startswith("ring") else -1
    k = int(order[4:] if step == 1 else order[3:]) % n  # a subgroup starts at member K mod its size
    acc = parts[k].clone()
    for j in range(1, n):
        acc = acc + parts[(k + step * j) % n]
    return acc


# ----------------------------------------------------------------------------- the world

class _Group:
    def __init__(self, ranks: tuple[int, ...]) -> None:
        self.ranks = ranks
        self.barrier = threading.Barrier(len(ranks), timeout=600)
        self.slots: dict = {}
        self.seq: dict[int, int] = {}

    def size(self) -> int:
        return len(self.ranks)


class _Work:
    def wait(self, *a, **k):
        return True

    def is_completed(self):
        return True


class World:
    """torch.distributed's collectives as one process with ranks as threads."""

    def __init__(self, w: int, order: str) -> None:
        self.w, self.order = w, order
        self.local = threading.local()
        self.lock = threading.Lock()
        self.groups: dict[tuple[int, ...], _Group] = {}
        self.world = self.group(tuple(range(w)))

    def group(self, ranks: tuple[int, ...]) -> _Group:
        with self.lock:
            if ranks not in self.groups:
                self.groups[ranks] = _Group(ranks)
            return self.groups[ranks]

    def _g(self, group) -> _Group:
        if group is None or group is dist.group.WORLD:
            return self.world
        return group

    # the API ---------------------------------------------------------------
    def get_rank(self, group=None):
        g = self._g(group)
        return g.ranks.index(self.local.rank) if self.local.rank in g.ranks else -1

    def get_world_size(self, group=None):
        return self._g(group).size()

    def get_global_rank(self, group, rank):
        return self._g(group).ranks[rank]

    def new_group(self, ranks=None, *a, **k):
        return self.group(tuple(ranks) if ranks is not None else tuple(range(self.w)))

    def _exchange(self, g: _Group, value, combine):
        """Every member deposits `value`; the first member computes combine(values in group
        order) once; every member gets the result."""
        me = g.ranks.index(self.local.rank)
        with self.lock:
            seq = g.seq.get(me, 0)
            g.seq[me] = seq + 1
            g.slots.setdefault(seq, [None] * g.size())[me] = value
        try:
            g.barrier.wait()
            if me == 0:
                vals = g.slots[seq]
                g.slots[seq] = (vals, combine(vals))
            g.barrier.wait()
            vals, result = g.slots[seq]
            g.barrier.wait()
        except threading.BrokenBarrierError:
            raise RuntimeError("a peer rank failed") from None
        if me == 0:
            del g.slots[seq]
        return vals, result, me

    def _reduce(self, parts, op):
        name = getattr(op, "name", None) or str(op).split(".")[-1]
        if name in ("SUM", "AVG"):
            s = ordered_sum(parts, self.order)
            return s / len(parts) if name == "AVG" else s
        if name == "MAX":
            return torch.stack(parts).amax(0)
        if name == "MIN":
            return torch.stack(parts).amin(0)
        if name == "PRODUCT":
            return torch.stack(parts).prod(0)
        raise NotImplementedError(f"ReduceOp {op}")

    def all_reduce(self, t, op=dist.ReduceOp.SUM, group=None, async_op=False):
        _, res, _ = self._exchange(self._g(group), t.clone(), lambda v: self._reduce(v, op))
        t.copy_(res)
        return _Work() if async_op else None

    def reduce(self, t, dst, op=dist.ReduceOp.SUM, group=None, async_op=False):
        g = self._g(group)
        _, res, _ = self._exchange(g, t.clone(), lambda v: self._reduce(v, op))
        if self.local.rank == dst:
            t.copy_(res)
        return _Work() if async_op else None

    def reduce_scatter_tensor(self, out, inp, op=dist.ReduceOp.SUM, group=None, async_op=False):
        g = self._g(group)
        _, res, me = self._exchange(g, inp.clone(), lambda v: self._reduce(v, op))
        out.copy_(res.reshape(g.size(), *out.shape)[me])
        return _Work() if async_op else None

    def reduce_scatter(self, out, inputs, op=dist.ReduceOp.SUM, group=None, async_op=False):
        g = self._g(group)
        vals, _, me = self._exchange(g, [x.clone() for x in inputs], lambda v: None)
        out.copy_(self._reduce([v[me] for v in vals], op))
        return _Work() if async_op else None

    def all_gather_into_tensor(self, out, inp, group=None, async_op=False):
        vals, _, _ = self._exchange(self._g(group), inp.clone(), lambda v: None)
        out.copy_(torch.cat([v.reshape(-1) for v in vals]).reshape(out.shape))
        return _Work() if async_op else None

    def all_gather(self, outs, inp, group=None, async_op=False):
        vals, _, _ = self._exchange(self._g(group), inp.clone(), lambda v: None)
        for o, v in zip(outs, vals):
            o.copy_(v)
        return _Work() if async_op else None

    def broadcast(self, t, src, group=None, async_op=False):
        g = self._g(group)
        vals, _, _ = self._exchange(g, t.clone(), lambda v: None)
        t.copy_(vals[g.ranks.index(src)])
        return _Work() if async_op else None

    def gather(self, t, gather_list=None, dst=0, group=None, async_op=False):
        vals, _, _ = self._exchange(self._g(group), t.clone(), lambda v: None)
        if self.local.rank == dst and gather_list is not None:
            for o, v in zip(gather_list, vals):
                o.copy_(v)
        return _Work() if async_op else None

    def all_to_all_single(self, out, inp, output_split_sizes=None, input_split_sizes=None, group=None,
                          async_op=False):
        g = self._g(group)
        n = g.size()
        ins = list(torch.split(inp, list(input_split_sizes))) if input_split_sizes else list(inp.chunk(n))
        vals, _, me = self._exchange(g, [x.clone() for x in ins], lambda v: None)
        out.copy_(torch.cat([v[me] for v in vals]).reshape(out.shape))
        return _Work() if async_op else None

    def all_to_all(self, outs, ins, group=None, async_op=False):
        vals, _, me = self._exchange(self._g(group), [x.clone() for x in ins], lambda v: None)
        for o, v in zip(outs, vals):
            o.copy_(v[me])
        return _Work() if async_op else None

    def barrier(self, group=None, *a, **k):
        self._exchange(self._g(group), None, lambda v: None)


_API = ("get_rank", "get_world_size", "get_global_rank", "new_group", "all_reduce", "reduce",
        "reduce_scatter_tensor", "reduce_scatter", "all_gather_into_tensor", "all_gather", "broadcast",
        "gather", "all_to_all_single", "all_to_all", "barrier")


def run_reference(problem, w: int, inputs: list[tuple], order: str) -> list:
    """Each rank's output of the reference with every cross-rank sum in `order`."""
    world = World(w, order)
    saved = {n: getattr(dist, n) for n in _API}
    saved["is_initialized"] = dist.is_initialized
    for n in _API:
        setattr(dist, n, getattr(world, n))
    dist.is_initialized = lambda: True
    outs: list = [None] * w
    errors: list = []
    # a module per rank: references cache per-rank state (their process groups) in globals
    solutions = []
    for r in range(w):
        ns: dict = {"__name__": f"reference_rank{r}"}
        exec(compile(problem.reference_source, f"{problem.id}/reference.py", "exec"), ns)
        solutions.append(ns["solution"])

    def body(r):
        world.local.rank = r
        try:
            args = tree.clone(inputs[r]) if hasattr(tree, "clone") else _clone(inputs[r])
            outs[r] = solutions[r](*args)
        except BaseException as exc:  # noqa: BLE001
            errors.append((r, exc))
            for g in list(world.groups.values()):
                g.barrier.abort()

    try:
        threads = [threading.Thread(target=body, args=(r,)) for r in range(w)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        for n, f in saved.items():
            setattr(dist, n, f)
    if errors:
        r, exc = min(errors, key=lambda e: isinstance(e[1], RuntimeError) and "peer" in str(e[1]))
        raise RuntimeError(f"rank {r}: {type(exc).__name__}: {exc}") from exc
    return outs


def _clone(x):
    if isinstance(x, torch.Tensor):
        return x.clone()
    if isinstance(x, (list, tuple)):
        return type(x)(_clone(v) for v in x)
    if isinstance(x, dict):
        return {k: _clone(v) for k, v in x.items()}
    return x


# ----------------------------------------------------------------------------- the measure

def _flat(x) -> list[torch.Tensor]:
    if isinstance(x, torch.Tensor):
        return [x]
    if isinstance(x, (list, tuple)):
        return [t for v in x for t in _flat(v)]
    if isinstance(x, dict):
        return [t for k in sorted(x) for t in _flat(x[k])]
    if isinstance(x, float):
        return [torch.tensor(x, dtype=torch.float64)]
    return []


def needed_atol(cand, ref, rtol: float) -> tuple[float, float]:
    """(the atol |cand - ref| <= atol + rtol |ref| needs over all float elements, max |cand - ref|)."""
    need = worst = 0.0
    for a, b in zip(_flat(cand), _flat(ref)):
        if not (a.is_floating_point() or a.is_complex()):
            if not torch.equal(a, b):
                return math.inf, math.inf
            continue
        a64, b64 = a.double(), b.double()
        d = (a64 - b64).abs()
        if d.numel():
            need = max(need, float((d - rtol * b64.abs()).max()))
            worst = max(worst, float(d.max()))
    return max(need, 0.0), worst


def measure(pid: str, w: int, seeds: int, size_name: str, override: dict | None = None) -> dict:
    problem = load_problem("builtin", pid)
    s = problem.spec
    if size_name == "measure":
        size = {**s.sizes["bench"], **MEASURE.get(pid, {})}
        size.setdefault("dtype", s.dtype)
        label = "measure" if pid in MEASURE else "bench"
        if override:
            size.update(override)
            label = ",".join(f"{k}={v}" for k, v in override.items())
    else:
        size = dict(s.sizes[size_name])
        size.setdefault("dtype", s.dtype)
        label = size_name
    problem.spec.sizes["_m"] = size
    row = dict(problem=pid, ws=w, dtype=size["dtype"], size=label, atol=s.atol, rtol=s.rtol,
               need=0.0, max_abs=0.0, pair="", note="")
    t0 = time.monotonic()
    for seed in range(seeds):
        inputs = [problem.make_inputs(r, w, seed, "_m") for r in range(w)]
        outs = {o: run_reference(problem, w, inputs, o) for o in orders(w)}
        for b, ref in outs.items():
            for a, cand in outs.items():
                if a == b:
                    continue
                for r in range(w):
                    need, worst = needed_atol(cand[r], ref[r], s.rtol)
                    row["max_abs"] = max(row["max_abs"], worst)
                    if need > row["need"]:
                        row["need"], row["pair"] = need, f"{a} vs ref {b}, seed {seed}, rank {r}"
    row["seconds"] = time.monotonic() - t0
    return row


def action(row: dict) -> str:
    if math.isinf(row["need"]):
        return "integers differ"
    if row["need"] > row["atol"]:
        return "FAIL: raise atol"
    if row["need"] > 0.75 * row["atol"]:
        return "within 25%: raise atol"
    return "ok"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("problems", nargs="*")
    ap.add_argument("--world-sizes", default="2,4,8")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--size", default="measure", choices=("measure", "bench", "small"))
    ap.add_argument("--set", default="", help="size overrides for --size measure, e.g. tokens=4096,hidden=2048")
    ap.add_argument("--threads", type=int, default=2, help="torch intra-op threads")
    ap.add_argument("--write", action="store_true", help="write benchmarks/results/tolerance_orders.md")
    a = ap.parse_args(argv)
    torch.set_num_threads(a.threads)
    pids = a.problems or list(DEFAULT)
    wss = [int(x) for x in a.world_sizes.split(",")]
    override = {k: int(v) for k, v in (kv.split("=") for kv in a.set.split(",") if kv)}
    head = "| problem | ws | dtype | size | atol | rtol | needed atol | max abs diff | worst pair | action |"
    lines = [head, "|" + "---|" * 10]
    print(head, flush=True)
    for pid in pids:
        for w in wss:
            try:
                problem = load_problem("builtin", pid)
                if w not in problem.spec.world_sizes:
                    continue
                row = measure(pid, w, a.seeds, a.size, override)
                line = (f"| {pid} | {w} | {row['dtype']} | {row['size']} | {row['atol']:g} | {row['rtol']:g} | "
                        f"{row['need']:.3g} | {row['max_abs']:.3g} | {row['pair']} | {action(row)} |")
            except Exception as exc:  # noqa: BLE001 - one problem's failure is a row
                line = f"| {pid} | {w} | | | | | | | | not run: {str(exc)[:100]} |"
            lines.append(line)
            print(line, flush=True)
    if a.write:
        out = REPO / "benchmarks" / "results" / "tolerance_orders.md"
        cmd = "PYTHONPATH=. python3 scripts/tolerance_orders.py " + " ".join(sys.argv[1:])
        out.write_text("# Summation order against each problem's tolerance (CPU)\n\n"
                       f"Command: `{cmd}`\n\n" + "\n".join(lines) + "\n")
        print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
