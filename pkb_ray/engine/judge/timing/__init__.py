"""Timing: one instrument for both halves of every speedup.

The judge's part: the sampling loop (sampling.py), held gates that expire (expiries.py) and
the host's load around the phase (conditions.py). The node turns the samples into figures
and their evidence (node/timing_evidence.py -> records.TimingEvidence, carried into the
journal and MLflow) and an interval (node/timing_stats.py); protocol/timing.py holds what
both sides read.

The instrument. The reference runs in a worker of its own: fresh per evaluation, started
like the candidate's (the same sandbox, zygote, launch gate, arena and delivery of outputs),
loading the problem's reference instead of the candidate, with real collectives. The judge
times both workers the same way: its own clock from opening a sample's gate (on cpu: from
the request) to the arrival of the worker's whole answer, less the floor: what the same
batch of do-nothing calls costs on that path. On cuda the floor is the median of empty runs
on the reference worker through the phase (it runs no candidate code); on cpu, and until
there are five, a calibration on both workers before any code but the harness's exists in
them. Samples alternate which half goes first, each first half right after an empty run on its
own worker (E R C | W C R: the reference worker's empty run E sets the floor, the candidate's
W is only a warm-up; sampling.Interleaved.first says why); the candidate's inputs and sampled
outputs are checked after both halves, so that neither half starts behind the checks. On cpu,
where both workers share every core at one scheduling class, the worker whose half is not
being timed is stopped (judge/freezer.py): a candidate's process left spinning beside the
reference's half would otherwise take its cores at equal weight, and both halves start
from the same state (their worker just resumed, the other stopped). A worker's own clock is
reported beside and kept as evidence: it flags a lie and never sets a figure.

Why this one, against the alternatives (docs/design.md):
- Reference by CUDA events in the judge, candidate by the worker's own events, and the
  judge's window when the worker's report looks too small: two instruments. One H200,
  allreduce: the reference against itself reads 1.003, then 0.728 when the window is
  believed; the allreduce expert 0.42 by its events, 0.30 by the window; 38 of 80
  references self-time within 3%, every outlier timed by the window. On cpu, with the
  halves in different processes, the self-check's geomean reads 0.751, and a worker that
  under-reports gets max(0, window - floor) = 0, a speedup of inf.
- Both halves by the workers' own events: equal paths, but a candidate owns its worker's
  clock (it can patch it through sys.modules), so its figure would be its word.
- Both halves by the judge's window without a floor: honest and unforgeable, but the
  delivery of outputs and the messages (tens of microseconds per sample) sit in both
  windows and pull every ratio towards 1; the floor removes them from both alike.
- What the window holds besides the calls is kept small, since the floor's spread is in
  every sample: the worker queues its output copies behind the calls and encodes its answer
  before the gate opens. With both after the synchronize, 64 empty calls at 1024x1024 cost
  0.8 ms around 0.2 ms of copying and the reference's calls there are unmeasurable; this
  way, 0.24-0.31 ms (H100).
"""
