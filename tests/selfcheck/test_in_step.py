"""Every rank of a reference joins every collective, whatever its own data: on
gnn_distributed_neighbor_sampling, whose ranks fell out of step, and on every builtin
problem over many seeds.

gnn_distributed_neighbor_sampling's old reference left its hop loop on conditions only one rank saw (`if src.numel() == 0:
break`): a rank whose frontier emptied first stopped, while its peers went on into the next
all-to-all and waited for it. In 2 of 3 CPU self-checks (issue 23) the judges hung there
for 600 s ("gloo ... Timed out waiting 600000ms for send operation").

The first tests run that reference in 2 real gloo rank processes with a collective timeout of
COLLECTIVE_TIMEOUT_S, on inputs from the problem's own make_inputs chosen so that one rank's
frontier empties a hop before the other's (test_cases_reach_a_rank_that_runs_dry_first says
they do), and compare every rank's output with truth.py. The old reference is kept as a
fixture and must fail here, within seconds and by its own error, not by being killed: a
check that cannot fail proves nothing. (Measured: its ranks pair one case's all-to-all
with the next case's and rank 0 raises IndexError after 3.1 s; a rank left alone in a
collective would raise at COLLECTIVE_TIMEOUT_S.) The last two run every builtin reference
over SCAN_SEEDS seeds, and the old gnn reference, which the scan must catch.
"""

from __future__ import annotations

import shutil
from datetime import timedelta
from pathlib import Path

import torch

from pkb_ray.selfcheck.launcher import run_ranks
from pkb_ray.problems import load_problems
from pkb_ray.problems.common import import_file
from pkb_ray.selfcheck.ranks import run_in_ranks
from pkb_ray.selfcheck.truth import load_truth

PID = "gnn_distributed_neighbor_sampling"
WORLD_SIZE = 2
COLLECTIVE_TIMEOUT_S = 10.0
"""A call at these sizes takes milliseconds; 10 s leaves room for a loaded 2-core machine."""
GROUP_TIMEOUT_S = 150.0
"""The whole run (spawn + torch import + gloo init ~3 s per rank, then ~40 calls); past it
the ranks are killed, which would mean the collective timeout did not fire."""

PROBLEM = load_problems(ids=[PID]).problems[PID]
REFERENCE = PROBLEM.spec.directory / "reference.py"
OLD_REFERENCE = Path(__file__).parent / "fixtures" / "gnn_reference_breaks_early.py"

# A sparse graph (in-degree 0-2) with deep fanouts: a rank's frontier often runs dry a hop
# before its peer's (47 of the first 100 seeds at world size 2).
SPARSE = {"num_nodes": 40, "min_degree": 0, "max_degree": 2, "seeds": 2, "fanouts": [2, 2, 2], "dtype": "int64"}
# At the problem's own small size 1 seed in 100 does it (seed 20): the case the self-checks hit.
CASES: list[tuple[int, dict]] = [(20, PROBLEM.spec.sizes["small"]), (1234, PROBLEM.spec.sizes["small"])] + [
    (seed, SPARSE) for seed in range(12)]


def _inputs(rank: int, seed: int, size: dict) -> tuple:
    return tuple(PROBLEM.make_inputs_fn(rank, WORLD_SIZE, seed, size, "cpu"))


def _run_reference(rank: int, world_size: int, init_file: str, reference: str, cases: list) -> list:
    """One rank: the reference at `reference` on every case, in order (spawned by run_ranks)."""
    import torch.distributed as dist

    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=world_size,
                            timeout=timedelta(seconds=COLLECTIVE_TIMEOUT_S))
    solution = import_file(Path(reference), f"in_step_reference_{rank}").solution
    # as lists: a tensor crosses the pipe by torch's shared-memory reducer, which needs the
    # sending rank alive when the parent reads it
    outs = [[t.tolist() for t in solution(*_inputs(rank, seed, size))] for seed, size in cases]
    dist.destroy_process_group()
    return outs


def _hops_entered(inputs: list[tuple]) -> list[int]:
    """Per rank, the hops its frontier is non-empty for under the description's stop rule
    (the hops the old reference ran collectives for)."""
    owner, local = inputs[0][5], inputs[0][6]
    entered = []
    for seeds, fanouts, *_ in inputs:
        seen, src, n = set(seeds.tolist()), seeds.tolist(), 0
        for k in fanouts:
            if not src:
                break
            n += 1
            hop = []
            for v in src:
                colptr, row = inputs[int(owner[v])][2], inputs[int(owner[v])][3]
                nbrs = row[int(colptr[local[v]]):int(colptr[local[v] + 1])].tolist()
                hop += nbrs if k < 0 else nbrs[:k]
            src = [u for u in dict.fromkeys(hop) if u not in seen]
            seen.update(src)
        entered.append(n)
    return entered


def test_cases_reach_a_rank_that_runs_dry_first():
    uneven = [(seed, size is SPARSE) for seed, size in CASES
              if len(set(_hops_entered([_inputs(r, seed, size) for r in range(WORLD_SIZE)]))) > 1]
    assert (20, False) in uneven  # the problem's own small size
    assert len(uneven) >= 5, uneven


def test_reference_stays_in_step_and_matches_truth(tmp_path):
    result = run_ranks(_run_reference, WORLD_SIZE, (str(tmp_path / "store"), str(REFERENCE), CASES),
                       timeout_s=GROUP_TIMEOUT_S)
    assert result.ok, result.why()
    truth = load_truth(PROBLEM)
    for i, (seed, size) in enumerate(CASES):
        want = truth.expected([_inputs(r, seed, size) for r in range(WORLD_SIZE)], WORLD_SIZE)
        for r in range(WORLD_SIZE):
            got = result.returned[r][i]
            assert len(got) == len(want[r]) == 4
            for name, g, w in zip(("node", "row", "col", "edge"), got, want[r]):
                assert w.dtype == torch.int64 and g == w.tolist(), (seed, size is SPARSE, r, name, g, w)


def test_old_reference_falls_out_of_step_and_fails_fast(tmp_path):
    # The reference before issue 23's fix: its ranks leave the hop loop on their own data.
    # Its peer then waits in an all-to-all nobody joins, or pairs it with a later one: an
    # error in a rank (a mispaired exchange, or the collective timeout), not the group's
    # kill, must end it.
    result = run_ranks(_run_reference, WORLD_SIZE, (str(tmp_path / "store"), str(OLD_REFERENCE), CASES),
                       timeout_s=GROUP_TIMEOUT_S)
    assert not result.ok
    assert not result.timed_out, result.why()
    assert result.failures, result.why()


SCAN_SEEDS = range(30)
"""Seeds per problem in the scan: gnn_distributed_neighbor_sampling's old reference fell out
of step on 1 seed in 100 at its small size (seed 20), and the scan over 30 catches it."""


def _many_seeds(problem, rank: int, world_size: int) -> int:
    for seed in SCAN_SEEDS:
        problem.solution(*problem.make_inputs(rank, world_size, seed, "small"))
    return len(SCAN_SEEDS)


def test_every_builtin_reference_stays_in_step_over_many_seeds():
    # `pkb problems check` runs two seeds; a rank-local exit shows on a rarer input. Real gloo
    # ranks (selfcheck/ranks.py): a rank out of step fails or hangs, and its problem fails.
    # World size 2 only: 11 s here, where 4 ranks on this 2-core machine take 36 s.
    problems = load_problems().problems
    ids = [pid for pid, p in problems.items() if p.spec.runs_at(WORLD_SIZE)]
    runs = run_in_ranks(WORLD_SIZE, "builtin", ids, _many_seeds, problem_timeout_s=90, grace_s=10)
    assert {pid: r.failure for pid, r in runs.items() if not r.ok} == {}
    assert sorted(runs) == sorted(ids)


def test_the_seed_scan_catches_the_old_reference(tmp_path):
    d = tmp_path / PID
    shutil.copytree(PROBLEM.spec.directory, d, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(OLD_REFERENCE, d / "reference.py")
    (run,) = run_in_ranks(WORLD_SIZE, str(tmp_path), [PID], _many_seeds, problem_timeout_s=90,
                          grace_s=10).values()
    assert not run.ok
