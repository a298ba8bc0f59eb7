"""The smallest entry point for running the model's own code on the ranks, in a sandbox.

The engine evaluates candidates (judges + workers); it has no entry point for "run this
script on every rank and give me its output", which `run` and `profile` need. This starts
engine/worker/agent_rank.py through the engine's own spawn spec (engine/launch/spawn.py: the same
plan, binds, hidden directories and environment a candidate's workers get, and the NCCL
stub for a guarded profile on cuda), waits up to a time limit, and reads back each rank's output.
Candidates' judges are never involved, so nothing secret is within reach.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from dataclasses import dataclass

from pkb_ray.config.schema import SandboxConfig
from pkb_ray.engine import launch, nccl_stub
from pkb_ray.engine.protocol.rank_ends import RankEnd, ends_in

START_S = 60.0
"""The sandbox's own start (a torch import, 1-3 s), before the caller's limit starts."""


@dataclass
class RankJob:
    mode: str
    """script | profile (engine/worker/agent_rank.py)."""
    world_size: int
    device: str
    timeout_s: float
    files: dict[str, str]
    """Written into the sandbox's private directory first (script.py, candidate.py, inputs)."""
    profile_calls: int = 5
    extensions_from: str = ""
    """The module's prebuilt extensions (engine/build.py), copied into the ranks' extension
    directory before they start; empty: whatever the module builds, it builds on the ranks."""


@dataclass
class RankExit:
    rank: int
    exit_code: int | None
    output: str
    report: dict | None = None
    """profile_rank<r>.json, when the rank wrote it."""
    signal_name: str | None = None
    """SIGSEGV, SIGKILL, ... when a signal ended the rank (exit_code is None then)."""


@dataclass
class RanksOutcome:
    ranks: list[RankExit]
    timed_out: bool
    wall_s: float
    sandbox_error: str = ""


def run_on_ranks(job: RankJob, sandbox_cfg: SandboxConfig, cache_dirs: list[str],
                 gpus: tuple[int, ...] | None = None, output_chars: int = 3000) -> RanksOutcome:
    plan = launch.plan_sandbox(sandbox_cfg.mode, sandbox_cfg.user, sandbox_cfg.bwrap_path or None)
    start = launch.AgentStart(mode=job.mode, world_size=job.world_size, device=job.device,
                             timeout_s=float(job.timeout_s), profile_calls=job.profile_calls)
    guarded = job.mode == "profile" and job.device == "cuda"
    binds = nccl_stub.build(cache_dirs[0]) if guarded and cache_dirs else {}
    cuda = job.device == "cuda"
    box = launch.Sandboxed(plan, tuple(cache_dirs), gpu=cuda, files=job.files, binds=binds,
                           trees={"ext": job.extensions_from} if os.path.isdir(job.extensions_from or "") else {},
                           gpus=launch.first_gpus(gpus, job.world_size) if cuda else None,
                           limits=launch.sandbox_bounds(job.world_size, 0, launch.node_groups(job.device, job.world_size)))
    env = launch.child_env(job.device, job.world_size, gpus)
    t0 = time.monotonic()
    proc = launch.start(launch.SpawnSpec("pkb_ray.engine.worker.agent_rank", start, env, sandbox=box))
    timed_out = False
    try:
        if proc.wait_ready(START_S):  # the limit starts once torch is imported
            proc.popen.wait(job.timeout_s)
    except subprocess.TimeoutExpired:
        timed_out = True
    finally:
        proc.kill()
    wall_s = time.monotonic() - t0
    zygote_log = proc.log_tail("zygote.log", 20000)
    ends = ends_in(zygote_log)
    ranks = []
    for r in range(job.world_size):
        try:  # the candidate's to write: read as launch.read_sandbox_file reads, checked by the caller
            report = json.loads(proc.read_file(f"profile_rank{r}.json", 200_000) or b"null")
        except (ValueError, RecursionError):  # malformed, or nested past the parser's depth
            report = None
        end = ends.get(r)
        ranks.append(RankExit(r, end.exit_code if end else None, proc.log_tail(f"rank{r}.log", output_chars), report,
                              end.signal_name if end else None))
    other = [ln for ln in zygote_log.splitlines() if ln.strip() and RankEnd.parse(ln) is None]
    err = "" if ends or timed_out else ("\n".join(other)[-2000:] or "the sandbox did not start")
    proc.cleanup()
    return RanksOutcome(ranks, timed_out, wall_s, err)
