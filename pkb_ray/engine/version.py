"""The harness version: part of every reference-cache key and every result.

Bump it when a change alters what a number means (timing method, correctness rule,
seeds), so cached references and timings from the old harness are not reused."""

HARNESS_VERSION = "0.5.0"  # 0.5.0: one timing mode per problem (held, calls per sample) kept by the node; expired samples left out; loaded hosts unmeasurable
# 0.4.12: the batch bounded by the reference's probe alone (a candidate's can only enlarge it); ints in frames bounded
# 0.4.11: cuda: one intra-op thread on a pinned judge and worker; output copy kernels loaded at set-up (0.4.10 was a reverted batching)
# 0.4.8: cuda: the probe taken again unheld after a held gate expired (batch sizes of host-waiting calls); a look at the interval every 10 samples
# 0.4.7: cuda: output copies queued behind the calls, the answer encoded before the gate opens (a lower floor); workers set up off the timed cores
# 0.4.6: cuda's between-evaluations term refitted for the pairs' median (0.010). 0.4.5: the speedup is the median of the pairs' ratios. 0.4.4: cuda: intervals widened by the spread between evaluations. 0.4.3: cpu: the idle worker stopped between halves; checks after the pair
# 0.4.2: cpu: both workers at SCHED_IDLE, prewarm after; cpu intervals widened
# 0.4.1: workers pinned (cuda), warm-up by time, cpu samples of ~10 ms
# 0.4.0: the reference in its own worker, one clock for both halves
# 0.3.0: judge/worker processes, secret seeds, interleaved timing
