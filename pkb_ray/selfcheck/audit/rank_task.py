"""One rank's audit of one problem (runs in a rank process started by ranks.run_in_ranks).

In order, the same on every rank (each reference call is a collective, so every rank makes
the same calls in the same order):
 1. the self-check (check.check_one) at the small size: the contract, determinism, and the
    packed inputs and output the parent compares with truth.py;
 2. inputs at the audited size for two seeds, digested on the device (digest.py);
 3. one call under the dispatcher's counter (ledger.py);
 4. on CUDA: event timing, the queued-launch timing and the profiler (gpu_timing.py,
    kernels.py); on CPU these are skipped (the parent says why);
 5. one call per tolerance seed, each compared with truth.py locally (tolerance.py): last,
    so that a slow truth.py costs nothing above it.
What fails in local code (truth.py, the profiler) becomes a note; what fails in a reference
call raises, and the group moves on without this problem (ranks.py).
"""

from __future__ import annotations

import gc
import time
from dataclasses import dataclass
from typing import Any

from pkb_ray.selfcheck.audit.records import AuditPlan, RankAudit


@dataclass(frozen=True)
class AuditTask:
    """The task run_in_ranks calls for every problem: task(problem, rank, world_size)."""

    plan: AuditPlan

    def __call__(self, problem, rank: int, world_size: int) -> RankAudit:
        try:
            return _audit(self.plan, problem, rank, world_size)
        finally:
            _release_memory(self.plan.device)


def _release_memory(device: str) -> None:
    gc.collect()
    if device == "cuda":
        import torch

        torch.cuda.empty_cache()


def _audit(plan: AuditPlan, problem, rank: int, world_size: int) -> RankAudit:
    import torch

    from pkb_ray.problems.memory import host_bytes_per_rank, require_fits
    from pkb_ray.selfcheck import ranks
    from pkb_ray.selfcheck.audit import digest, ledger, tolerance
    from pkb_ray.selfcheck.check import check_one
    from pkb_ray.selfcheck.truth import TruthError, load_truth

    cuda = plan.device == "cuda"
    device = f"cuda:{rank}" if cuda else "cpu"
    stage_s: dict[str, float] = {}
    notes: list[str] = []
    clock = time.perf_counter()

    def lap(name: str) -> None:
        nonlocal clock
        now = time.perf_counter()
        stage_s[name] = round(now - clock, 4)
        clock = now

    check = check_one(problem, rank, world_size, device=device)
    lap("check")
    capacity = torch.cuda.mem_get_info(device)[0] if cuda else host_bytes_per_rank(world_size)
    require_fits(problem, rank, world_size, plan.size, capacity, f"{device} (free)" if cuda else "host (per rank)")
    seed_a, seed_b = plan.seeds[0], plan.seeds[1] if len(plan.seeds) > 1 else plan.seeds[0] + 1
    inputs = problem.make_inputs(rank, world_size, seed_a, plan.size, device)
    other = problem.make_inputs(rank, world_size, seed_b, plan.size, device)
    digests = (digest.digest_inputs(inputs), digest.digest_inputs(other))
    del other
    lap("inputs")

    first_out, counted = ledger.count_call(problem.solution, inputs, rank, world_size)
    outputs: dict[int, Any] = {seed_a: first_out}
    lap("ledger")

    times = queued = kernels = None
    if cuda:
        from pkb_ray.selfcheck.audit import gpu_timing

        dev = torch.device(device)
        agree = _agree_max(ranks.host_group())
        times = gpu_timing.time_calls(problem.solution, inputs, plan, ranks.host_barrier, agree, dev)
        lap("timing")
        queued = gpu_timing.queued_calls(problem.solution, inputs, plan.launch_calls,
                                         gpu_timing.median(times.host_ms) or 0.0, ranks.host_barrier, agree, dev)
        lap("queued")
        if plan.profiler:
            from pkb_ray.selfcheck.audit.kernels import profile_calls

            kernels, note = profile_calls(problem.solution, inputs, plan.profiler_calls, ranks.host_barrier)
            if note:
                notes.append(note)
            lap("profiler")

    # tolerance: the outputs of every seed first (collectives), then truth.py locally
    try:
        truth = load_truth(problem)
    except TruthError as exc:
        truth = None
        notes.append(str(exc))
    del inputs
    if truth is not None:
        for seed in plan.seeds[1:]:
            outputs[seed] = problem.solution(*problem.make_inputs(rank, world_size, seed, plan.size, device))
    lap("seed_calls")
    errors = tolerance.seed_errors(problem, truth, rank, world_size, plan.size, device, outputs,
                                   plan.truth_limit_s) if not problem.is_upstream else ()
    lap("truth")
    return RankAudit(check=check, digests=digests, ledger=counted, times=times, queued=queued,
                     kernels=kernels, errors=errors, notes=tuple(notes), stage_s=stage_s)


def _agree_max(group):
    """max over ranks of a float, on the host group (every rank must call it alike)."""
    def agree(value: float) -> float:
        import torch
        import torch.distributed as dist

        t = torch.tensor([float(value)], dtype=torch.float64)
        dist.all_reduce(t, op=dist.ReduceOp.MAX, group=group)
        return float(t.item())
    return agree
