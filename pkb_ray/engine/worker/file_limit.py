"""The largest file a sandbox may write: set by each sandbox entry point (zygote, build
probe, agent ranks) before any candidate code runs, as both soft and hard limit, so the
candidate can lower it but not raise it (it has no CAP_SYS_RESOURCE in any sandbox kind
but `none` run as root).

This bounds each file, not the sum: a sandbox's /tmp is its working directory on the
host (the harness reads its logs there after it ended), so a candidate that writes many
files still fills the disk until the sandbox is removed (README, Known limits)."""

from __future__ import annotations

import resource

MAX_FILE_BYTES = 4 << 30
"""A CUDA extension's build writes objects of tens of MB; a rank's log, the store and the
Triton cache less. 4 GiB leaves room for any honest file."""


def apply(max_bytes: int = MAX_FILE_BYTES) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    if hard != resource.RLIM_INFINITY:
        max_bytes = min(max_bytes, hard)
    resource.setrlimit(resource.RLIMIT_FSIZE, (max_bytes, max_bytes))
