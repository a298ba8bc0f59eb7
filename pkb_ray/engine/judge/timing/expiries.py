"""What a held timing mode does with a sample whose launch gate expired.

A held gate expires when a half's calls cannot all be queued behind it before its timeout.
Two causes, told apart by what makes them stop:
- the launch queue is full: k calls of many kernels each fill it, and the host waits for
  the GPU, which the gate holds (muon_newton_schulz_tp, ddp_mlp_adam_step and
  mask_iou_suppression_allgather expired in every sample at 13-64 calls per sample, and in
  none at one, on 4 x H200). Fewer calls per sample fit: the sample size halves, for both
  halves alike, and the samples start over;
- the calls wait on the GPU from the host (an .item(), a synchronize): they expire at one
  call per sample too. Such a half cannot be timed held, and no figure is given, never one
  from another instrument.
A single expiry now and then is a kernel loaded at its first launch behind the gate: that
sample is left out and nothing changes. Which way each case goes depends on the code's
launches, not on noise, so the same code gets the same sample size in every evaluation.
"""

from __future__ import annotations

from dataclasses import dataclass

STREAK = 2
"""Samples in a row whose gate expired before the sample size halves (or, at one call,
before no figure is given): one expiry is a first launch's kernel load."""
MOST = 30
"""Expired samples in all after which an evaluation gives up however they came (a half
that expires every other sample would otherwise never stop)."""


@dataclass
class HeldExpiries:
    k: int
    """Calls per sample now (the problem's at first)."""
    streak: int = 0
    samples: int = 0
    """Samples left out because a gate expired."""
    reference: int = 0
    candidate: int = 0
    """Of them, those where that half's gate expired."""
    last_candidate: bool = False
    """The expiry that ended the streak was the candidate's."""

    def see(self, ref_expired: bool, cand_expired: bool) -> str:
        """keep | drop | shrink | give_up, for one sample."""
        if not (ref_expired or cand_expired):
            self.streak = 0
            return "keep"
        self.samples += 1
        self.reference += ref_expired
        self.candidate += cand_expired
        self.last_candidate = cand_expired and not ref_expired
        self.streak += 1
        if self.samples >= MOST:
            return "give_up"
        if self.streak < STREAK:
            return "drop"
        self.streak = 0
        if self.k > 1:
            self.k = max(1, self.k // 2)
            return "shrink"
        return "give_up"

    def why(self) -> str:
        """Why no figure, once see() said give_up."""
        if self.last_candidate:
            return (f"the candidate's calls wait on the GPU from the host: its launch gate expired in "
                    f"{self.candidate} samples, down to {self.k} call(s) per sample, and this problem is timed with "
                    "its calls held behind the gate")
        return (f"the reference's calls waited on the GPU from the host in {self.reference} samples, down to "
                f"{self.k} call(s) per sample, though this problem's mode holds them behind the gate")
