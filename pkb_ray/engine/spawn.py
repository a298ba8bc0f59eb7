"""One way into every child process: a SpawnSpec, the typed record it starts with, and the
one function that builds a child's environment.

Every process the harness starts is `python -m <module> <record>`:

    the judge           JudgeStart     trusted: started as is, tied to its node
    the worker zygote   WorkerStart    in a sandbox, one per candidate (and the reference)
    the build probe     BuildStart     in a sandbox with no GPU (answers a BuildProbed)
    the agent's ranks   AgentStart     in a sandbox (agent/ranks.py)
    the hardware probe  ProfileStart   trusted: measures the node once per fingerprint

<record> is one frozen dataclass, written by the wire codec (wire/messages.py: the same
rules that check every frame between a judge and its worker) and read back in the child by
`payload(Record)`, which checks every field's type. Nothing else reaches a child: its
environment is `child_env`'s (an allow-list, never a credential), its descriptors are the
ones the spec names, and a sandboxed child's directory, files and binds are the spec's
`sandbox`. Before, the same facts went four ways: a JSON dict in the judge's argv, the
string "cuda,2,1" and a comma list of descriptors in the zygote's environment, and a JSON
dict in the agent ranks' environment, each read by string keys.

Nothing here imports the judge's side: the worker's modules read their records from here
(tests/engine/test_wire.py checks what a worker imports).
"""

from __future__ import annotations

import ctypes
import json
import os
import signal
import subprocess
import sys
from dataclasses import dataclass, field
from typing import ClassVar, Mapping, TypeVar

from pkb_ray.engine import sandbox
from pkb_ray.engine.env import rank_env
from pkb_ray.engine.wire import messages as m

R = TypeVar("R", bound=m.Message)


# ---------------------------------------------------------------- what a child starts with

@dataclass(frozen=True)
class JudgeStart(m.Message):
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
    """The core this judge runs on (engine/cpu_pins.py); -1: the scheduler's choice."""


@dataclass(frozen=True)
class WorkerStart(m.Message):
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
    """Rank r's core (engine/cpu_pins.py), pinned before the candidate exists; empty: none."""
    yields: bool = False
    """Its ranks run at SCHED_IDLE: the candidate's pinned ones on cuda, both workers' on cpu
    (cpu_pins.yields says why)."""
    setup_cores: list[int] = field(default_factory=list)
    """Where a rank with a core sets up before it pins itself there (cpu_pins.unpinned)."""


@dataclass(frozen=True)
class BuildStart(m.Message):
    """The build probe (engine/worker/build_probe.py): import the candidate once, so that
    what it compiles lands in the sandbox's extension directory."""
    op: ClassVar[str] = "build_start"
    candidate_file: str
    """A file in the sandbox's directory."""


@dataclass(frozen=True)
class BuildProbed(m.Message):
    """The build probe's answer, its last line of output. The candidate's code ran in that
    process and can write it: it only ever fails its own build."""
    op: ClassVar[str] = "build_probed"
    ok: bool
    log: str = ""
    """The import's traceback."""


@dataclass(frozen=True)
class AgentStart(m.Message):
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
class ProfileStart(m.Message):
    """The hardware probe (engine/hardware.py): measure this node's profile."""
    op: ClassVar[str] = "profile_start"
    fingerprint: str


def payload(expected: type[R]) -> R:
    """In the child: the record it was started with (argv[1]), every field's type checked.
    Raises wire.frames.ProtocolError when it is not an `expected`."""
    return m.decode(json.loads(sys.argv[1]), (expected,))  # type: ignore[return-value]


# ---------------------------------------------------------------- how it starts

@dataclass(frozen=True)
class Sandboxed:
    """Where a sandboxed child runs (sandbox.start): the plan, what it may see, and what its
    private directory holds before it starts."""
    plan: sandbox.SandboxPlan
    cache_dirs: tuple[str, ...]
    """Directories no sandbox may see (the caches, the tracking store, the sweeps)."""
    gpu: bool
    """Bind the GPU device files."""
    files: Mapping[str, str] = field(default_factory=dict)
    """name -> text, written first."""
    dirs: tuple[str, ...] = ("ext",)
    """Made empty first (`ext`: the extension directory child_env names)."""
    binds: Mapping[str, str] = field(default_factory=dict)
    """A file of the node's shown in place of another (the NCCL stub over libnccl)."""
    trees: Mapping[str, str] = field(default_factory=dict)
    """name -> a directory of the node's, copied in (prebuilt extensions)."""


@dataclass(frozen=True)
class SpawnSpec:
    """A child process: `python -m module <payload>`, its environment (child_env), the
    descriptors it inherits, and, for candidate code, its sandbox."""
    module: str
    payload: m.Message
    env: Mapping[str, str]
    fds: tuple[int, ...] = ()
    sandbox: Sandboxed | None = None

    def argv(self) -> list[str]:
        return [sys.executable, "-m", self.module, json.dumps(m.to_wire(self.payload))]


def start(spec: SpawnSpec) -> sandbox.SandboxProcess:
    """Start a sandboxed child (its stdout is the pipe SandboxProcess.wait_ready reads)."""
    box = spec.sandbox
    if box is None:
        raise ValueError(f"{spec.module}: start() runs sandboxed children; use start_trusted()")
    return sandbox.start(box.plan, spec.argv(), env=dict(spec.env), pass_fds=list(spec.fds), gpu=box.gpu,
                         cache_dirs=list(box.cache_dirs), pre_files=dict(box.files), dirs=list(box.dirs),
                         binds=dict(box.binds) or None, trees=dict(box.trees) or None)


def start_trusted(spec: SpawnSpec, *, tie_to_parent: bool = False, capture: bool = False) -> subprocess.Popen:
    """Start a harness child, outside any sandbox, in a session of its own. `tie_to_parent`:
    it is killed when the thread that started it ends (PR_SET_PDEATHSIG follows the thread
    that forks: only pass True from a main thread). `capture`: its stdout and stderr as text
    pipes."""
    if spec.sandbox is not None:
        raise ValueError(f"{spec.module}: a sandboxed child is started by start()")
    out = subprocess.PIPE if capture else None
    return subprocess.Popen(spec.argv(), env=dict(spec.env), pass_fds=spec.fds, stdin=subprocess.DEVNULL,
                            stdout=out, stderr=out, text=capture, start_new_session=True,
                            preexec_fn=_die_with_parent if tie_to_parent else None)


def _die_with_parent() -> None:
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


# ---------------------------------------------------------------- what a child sees

def child_env(device: str, world_size: int, cuda_visible_devices: str | None = None, *,
              torch_cuda_arch_list: str | None = None, sandboxed: bool = True) -> dict[str, str]:
    """The environment of every child: env.rank_env's allow-list (never a credential; NVLink
    multicast forced off), and
      - its GPUs: on cuda the evaluation's (None: those this process sees), on cpu none,
        with this machine's cores shared among the `world_size` ranks;
      - TORCH_CUDA_ARCH_LIST when given (a build and its ranks must agree: another list
        changes torch's extension key and rebuilds, docs/design.md);
      - sandboxed: its caches in its own directory ({TMP}, which sandbox.start replaces
        with it) and loopback for gloo and NCCL (a sandbox has no other network);
      - trusted (a judge, the hardware probe): this interpreter's import path."""
    over: dict[str, str] = {}
    if device == "cuda":
        if cuda_visible_devices is not None:
            over["CUDA_VISIBLE_DEVICES"] = cuda_visible_devices
    else:
        over["CUDA_VISIBLE_DEVICES"] = ""
        over["OMP_NUM_THREADS"] = str(max(1, (os.cpu_count() or 1) // world_size))
    if torch_cuda_arch_list is not None:
        over["TORCH_CUDA_ARCH_LIST"] = torch_cuda_arch_list
    if sandboxed:
        over.update(TORCH_EXTENSIONS_DIR="{TMP}/ext", TRITON_CACHE_DIR="{TMP}/triton",
                    GLOO_SOCKET_IFNAME="lo", NCCL_SOCKET_IFNAME="lo")
    else:
        over["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    return rank_env(**over)
