"""What a child process starts with: one typed record per kind of child, and how the child
reads it back.

Every process the harness starts is `python -m <module> <record>`:

    the judge           JudgeStart     trusted: started as is, tied to its node
    the worker zygote   WorkerStart    in a sandbox, one per candidate (and the reference)
    the build probe     BuildStart     in a sandbox with no GPU (answers a BuildProbed)
    the agent's ranks   AgentStart     in a sandbox (agent/ranks.py)
    the hardware probe  ProfileStart   trusted: measures the node once per fingerprint

<record> is one frozen dataclass, written by the wire codec (messages.py: the same rules
that check every frame between a judge and its worker) and read back in the child by
`payload(Record)`, which checks every field's type. The parent's side (the launcher that
writes them and starts the child) is engine/launch/; a sandboxed child imports this module
and never the launcher (tests/test_import_graph.py).
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from typing import ClassVar, TypeVar

from pkb_ray.engine.protocol import codec

R = TypeVar("R", bound=codec.Message)


@dataclass(frozen=True)
class JudgeStart(codec.Message):
    """A judge (engine/judge/main.py): its rank of the judges' group, met on the node's TCP
    store, and the two descriptors it inherits."""
    op: ClassVar[str] = "judge_start"
    rank: int
    world_size: int
    device: str
    """cpu | cuda (the judge takes cuda:<rank>)."""
    store_port: int
    control_fd: int
    """The judge's end of its channel to the node."""
    gate_fd: int
    """The judges' own launch-gate page (the reference is timed behind it)."""
    gate_timeout_us: int
    group_timeout_s: float
    core: int = -1
    """The core this judge runs on (engine/node/cpu_pins.py); -1: the scheduler's choice."""


@dataclass(frozen=True)
class WorkerStart(codec.Message):
    """A worker zygote (engine/worker/zygote.py): one rank per channel, each set up (device
    and process group) right after the fork, before its candidate exists: a sandbox started
    ahead of its evaluation has paid for its CUDA context and group already."""
    op: ClassVar[str] = "worker_start"
    device: str
    world_size: int
    guard: bool
    """The process group whose collectives refuse, and the NCCL-free guard (off for the
    trusted reference worker)."""
    channel_fds: list[int]
    """Rank r's end of its channel to judge r."""
    cores: list[int] = field(default_factory=list)
    """Rank r's core (engine/node/cpu_pins.py), pinned before the candidate exists; empty: none."""
    yields: bool = False
    """Its ranks run at SCHED_IDLE: the candidate's pinned ones on cuda, both workers' on cpu
    (cpu_pins.yields says why)."""
    setup_cores: list[int] = field(default_factory=list)
    """Where a rank with a core sets up before it pins itself there (cpu_pins.unpinned)."""


@dataclass(frozen=True)
class BuildStart(codec.Message):
    """The build probe (engine/worker/build_probe.py): import the candidate once, so that
    what it compiles lands in the sandbox's extension directory."""
    op: ClassVar[str] = "build_start"
    candidate_file: str
    """A file in the sandbox's directory."""


@dataclass(frozen=True)
class BuildProbed(codec.Message):
    """The build probe's answer, its last line of output. The candidate's code ran in that
    process and can write it: it only ever fails its own build."""
    op: ClassVar[str] = "build_probed"
    ok: bool
    log: str = ""
    """The import's traceback."""


@dataclass(frozen=True)
class AgentStart(codec.Message):
    """The agent's ranks (engine/worker/agent_rank.py): the model's script or a profile of its
    module, on every rank."""
    op: ClassVar[str] = "agent_start"
    mode: str
    """script | profile."""
    world_size: int
    device: str
    timeout_s: float
    profile_calls: int


@dataclass(frozen=True)
class ProfileStart(codec.Message):
    """The hardware probe (engine/hardware.py): measure this node's profile."""
    op: ClassVar[str] = "profile_start"
    fingerprint: str


def payload(expected: type[R]) -> R:
    """In the child: the record it was started with (argv[1]), every field's type checked.
    Raises wire.frames.ProtocolError when it is not an `expected`."""
    return codec.decode(json.loads(sys.argv[1]), (expected,))  # type: ignore[return-value]
