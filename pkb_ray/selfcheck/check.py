"""`pkb problems check`: run every reference on CPU with gloo at the small size, in real
processes (ranks.py: one group of rank processes for all problems), hold its inputs and
outputs to the problem contract (check_one), and compare every rank's output with the
problem's truth.py (truth.py) where it has one.
"""

from __future__ import annotations

from dataclasses import dataclass

from pkb_ray.selfcheck.ranks import ProblemRun, run_in_ranks
from pkb_ray.selfcheck.truth import TruthError, first_mismatch, load_truth, pack, truth_path

SEED_A = 1234
SEED_B = 4321
SIZE = "small"


@dataclass
class CheckResult:
    """The verdict on one problem at one world size."""

    problem: str
    status: str
    """ok | FAIL | skip."""
    message: str = ""
    seconds: float = 0.0
    warnings: tuple[str, ...] = ()
    """What an upstream problem does that a native one may not (degenerate inputs, ...)."""
    truth: str = ""
    """`matched`: every rank's output matched the problem's truth.py; `missing`: a native
    problem without truth.py; empty: upstream, or the check did not get that far."""

    @property
    def ok(self) -> bool:
        return self.status != "FAIL"


def check_problems(world_size: int, source: str = "builtin", ids: list[str] | None = None,
                   problem_timeout_s: float = 120.0, grace_s: float = 10.0) -> list[CheckResult]:
    """Check the references of `source` (or `ids`) at `world_size`; one CheckResult per problem."""
    from pkb_ray.problems.loader import load_problems

    loaded = load_problems(source, ids)
    results: dict[str, CheckResult] = {}
    for err in loaded.errors:
        results[err.problem] = CheckResult(err.problem, "FAIL", f"load error: {err}")
    runnable = []
    for pid, p in loaded.problems.items():
        # a check is asked for by world size: test-only sizes (test_world_sizes) count
        if p.spec.runs_at(world_size, tests=True):
            runnable.append(pid)
        else:
            results[pid] = CheckResult(pid, "skip", p.spec.world_size_refusal(world_size, tests=True))
    for pid, run in run_in_ranks(world_size, source, runnable, check_one, problem_timeout_s, grace_s).items():
        results[pid] = verdict_of_run(loaded.problems[pid], run, world_size)
    order = [e.problem for e in loaded.errors] + list(loaded.problems)
    return [results[pid] for pid in order]


def verdict_of_run(problem, run: ProblemRun, world_size: int) -> CheckResult:
    """The CheckResult of one problem from its ranks' check_one payloads (the audit reuses it
    on the check part of its own payloads)."""
    if not run.ok:
        return CheckResult(run.problem, "FAIL", run.failure, run.seconds)
    # the same warning from every rank is said once, with the lowest rank that said it
    warnings: dict[str, int] = {}
    for r in sorted(run.reports):
        for w in run.reports[r].payload["warnings"]:
            warnings.setdefault(w, r)
    said = tuple(f"rank {r}: {w}" for w, r in warnings.items())
    payloads = [run.reports[r].payload for r in range(world_size)]
    if not problem.is_upstream:
        if not any(p.get("tensors", 1) for p in payloads):
            return CheckResult(run.problem, "FAIL", "no rank's inputs hold a tensor", run.seconds, said)
        if all(p.get("same_for_two_seeds", False) for p in payloads):
            return CheckResult(run.problem, "FAIL", f"degenerate inputs: seeds {SEED_A} and {SEED_B} gave "
                               f"identical inputs on every rank", run.seconds, said)
    blobs = [run.reports[r].payload["io"] for r in range(world_size)]
    if all(b is None for b in blobs):
        return CheckResult(run.problem, "ok", "", run.seconds, said,
                           truth="" if problem.is_upstream else "missing")
    try:
        truth = load_truth(problem)
        mismatch = first_mismatch(truth, blobs, world_size)
    except TruthError as exc:
        mismatch = str(exc)
    if mismatch:
        return CheckResult(run.problem, "FAIL", mismatch, run.seconds, said)
    return CheckResult(run.problem, "ok", "", run.seconds, said, truth="matched")


class CheckFailure(AssertionError):
    pass


def check_one(problem, rank: int, world_size: int, device: str = "cpu") -> dict:
    """The per-rank checks of one problem; raises CheckFailure with the reason. Returns
    {"warnings": [...], "io": this rank's packed inputs and output when the problem has a
    truth.py (the parent compares all ranks' outputs with it), else None}.

    Native problems are held to the contract (docs: PROBLEMS_V2.md): native argument types,
    random non-constant inputs that change with the seed, the declared dtype, inputs left
    unmodified, only tensors NCCL accepts handed to collectives (layout.py). Upstream problems are taken as they are: what a native problem would fail
    on becomes a warning, and degenerate inputs (constant fills, every seed alike) are named
    so the results can carry the `degenerate` flag. `device`: where the inputs are made
    (`cuda:RANK` in a CUDA rank); what goes to the parent is copied to the host first."""
    import torch

    from pkb_ray.problems import args as tree
    from pkb_ray.selfcheck.layout import watch_layouts
    from pkb_ray.problems.memory import host_bytes_per_rank, require_fits

    upstream = problem.is_upstream
    warnings: list[str] = []

    def lapse(msg: str) -> None:
        if not upstream:
            raise CheckFailure(msg)
        warnings.append(msg)

    if upstream:
        # upstream 68 allocates ~26 GiB per rank at every size; native small sizes are small
        # by contract, and the estimate's first use costs ~3 s per rank process
        if device == "cpu":
            require_fits(problem, rank, world_size, SIZE, host_bytes_per_rank(world_size), "host (per rank)")
        else:
            # shapes alone: the estimate runs on the host whatever the device
            require_fits(problem, rank, world_size, SIZE, torch.cuda.mem_get_info(device)[0], f"{device} (free)")
    a = problem.make_inputs(rank, world_size, SEED_A, SIZE, device)
    b = problem.make_inputs(rank, world_size, SEED_A, SIZE, device)
    c = problem.make_inputs(rank, world_size, SEED_B, SIZE, device)
    if not a:
        raise CheckFailure("make_inputs returned no arguments")
    if not upstream:
        bad = tree.native_type_errors(a, "input ")
        if bad:
            raise CheckFailure("; ".join(bad[:3]))
    diff = tree.first_difference(a, b, "input ")
    if diff:
        raise CheckFailure(f"seed {SEED_A} gave different inputs on two calls ({diff})")
    all_tensors = list(tree.tensors(a))
    if not all_tensors and upstream:
        warnings.append("no tensor among the inputs")
    constant = [(p, t) for p, t in all_tensors if tree.is_constant(t)]
    if constant:
        p, t = constant[0]
        lapse(f"input{p} is constant ({t.reshape(-1)[0].item()!r})"
              + (f" and {len(constant) - 1} more" if len(constant) > 1 else ""))
    degenerate = tree.degeneracy(a, c)
    if degenerate and upstream:
        warnings.append(f"degenerate inputs (seeds {SEED_A} and {SEED_B}): " + "; ".join(degenerate))
        if not problem.degenerate:
            warnings.append("the loader did not mark it degenerate (its inputs need a process group)")
    if not upstream:
        _check_input_dtype(problem, all_tensors)

    with watch_layouts() as refused:
        out1 = problem.solution(*tree.clone(a))
        out2 = problem.solution(*a)
    if refused:
        lapse(refused[0] + (f" (and {len(refused) - 1} more)" if len(refused) > 1 else ""))
    diff = tree.first_difference(a, b, "input ")
    if diff:
        lapse(f"the reference modified its inputs ({diff})")
    if not upstream:
        bad = tree.native_type_errors(out1, "output ")
        if bad:
            raise CheckFailure("; ".join(bad[:3]))
    _check_outputs(problem, out1, strict=not upstream)
    diff = tree.first_difference(out1, out2, "output ")
    if diff:
        noise = _order_noise(out1, out2, problem.spec.atol, problem.spec.rtol)
        if noise is None:
            raise CheckFailure(f"the reference is not deterministic: two calls on the same inputs differ ({diff})")
        warnings.append(f"the reference sums in an order the device picks per call (atomics): two calls on "
                        f"the same inputs differ by up to {noise:.3g}, within {ORDER_NOISE_SHARE} of the tolerance")
    return {"warnings": warnings, "io": pack(a, out1) if truth_path(problem) else None,
            # judged over all ranks (verdict_of_run): a rank with no data of its own (a scatter's
            # receivers hold None) may see the same inputs for two seeds; every rank may not
            "tensors": len(all_tensors), "same_for_two_seeds": tree.first_difference(a, c) is None}


ORDER_NOISE_SHARE = 0.1
"""Two calls of a reference on the same inputs may differ in floating outputs by this share of
the problem's tolerance (atol + rtol x |value|), and no more: a sum whose order the GPU picks
per call (CUDA's index_add_ and scatter_add_ use atomics) rounds differently each time, while
hidden state or randomness moves outputs by far more. Candidates are held to the tolerance,
never to exact repeats. An exact-data problem (atol = rtol = 0) still must repeat exactly."""


def _order_noise(out1, out2, atol: float, rtol: float) -> float | None:
    """The largest difference between two outputs that differ only by summation order (every
    leaf equal but floating tensors, which stay within ORDER_NOISE_SHARE of the tolerance),
    else None."""
    import torch

    from pkb_ray.problems import args as tree

    l1, l2 = list(tree.leaves(out1)), list(tree.leaves(out2))
    if [p for p, _ in l1] != [p for p, _ in l2]:
        return None
    worst = 0.0
    for (path, a), (_, b) in zip(l1, l2):
        floats = (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.is_floating_point()
                  and a.layout == b.layout == torch.strided and a.shape == b.shape and a.dtype == b.dtype)
        if not floats:
            if tree.first_difference(a, b, path):
                return None
            continue
        a64, b64 = a.detach().double(), b.detach().double()
        gap = torch.where(a64.isnan() & b64.isnan(), 0.0, (a64 - b64).abs())
        if not bool((gap <= ORDER_NOISE_SHARE * (atol + rtol * b64.abs().nan_to_num(0.0))).all()):  # NaN gap: not within
            return None
        worst = max(worst, float(gap.max()) if gap.numel() else 0.0)
    return worst


def _check_input_dtype(problem, all_tensors) -> None:
    import torch

    want = getattr(torch, problem.spec.sizes[SIZE]["dtype"])
    # fp8 payloads (quantised data) do not say what the problem computes in
    floats = [(p, t) for p, t in all_tensors if t.is_floating_point() and t.element_size() > 1]
    if floats and floats[0][1].dtype != want:
        raise CheckFailure(f"first floating input (input{floats[0][0]}) is {floats[0][1].dtype}, "
                           f"metadata says {want}")


def _check_outputs(problem, out, strict: bool) -> None:
    import torch

    from pkb_ray.problems import args as tree

    want = getattr(torch, problem.spec.sizes[SIZE]["dtype"])
    fp8 = {getattr(torch, n) for n in ("float8_e4m3fn", "float8_e5m2") if hasattr(torch, n)}
    for p, t in tree.tensors(out if isinstance(out, (tuple, list, dict)) else (out,)):
        if t.layout == torch.strided and (t.is_floating_point() or t.is_complex()) \
                and not bool(torch.isfinite(t.float() if t.dtype in fp8 else t).all()):
            raise CheckFailure(f"output {p} has non-finite values")
        # fp8 outputs are what quantisation problems return, whatever the input dtype
        if strict and t.is_floating_point() and t.dtype not in (want, torch.float32, *fp8):
            raise CheckFailure(f"output {p} is {t.dtype}; expected {want} (or float32 statistics)")
