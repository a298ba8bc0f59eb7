"""The suite audit behind `pkb problems check`: is every problem a sound benchmark at a
world size, on this node's CPUs (gloo) or GPUs (one process per GPU, NCCL)?

For each problem, in one group of rank processes for the whole suite:
  - correct: the self-check (check.py) and truth.py at the small size;
  - tolerance: the reference's own error against truth.py over several seeds, at the
    audited size, in units of the problem's tolerance (tolerance.py);
  - inputs: different per seed and per rank, no constant fills (digest.py);
  - counts: the roofline counts against what the reference's own ops ask for (ledger.py,
    comm.py), on CUDA weighed by the node's rates (hardware_profile.py);
  - on CUDA only: the call's time (CUDA events), whether it is launch-bound (queued
    launches, gpu_timing.py; the profiler's busy time, kernels.py) and its roofline fraction.

  records.py     what ranks send and what the parent decides
  rank_task.py   one rank's audit of one problem (the task run_in_ranks runs)
  verdict.py     the thresholds, and the findings they give
  run.py         every problem at one world size
  report.py      the table, markdown and JSON
"""

from pkb_ray.selfcheck.audit.records import AuditPlan, Finding, ProblemAudit
from pkb_ray.selfcheck.audit.run import AuditRun, audit_problems, load_reasons, merge_reasons, shipped_reasons_path

__all__ = ["AuditPlan", "AuditRun", "Finding", "ProblemAudit", "audit_problems", "load_reasons", "merge_reasons",
           "shipped_reasons_path"]
