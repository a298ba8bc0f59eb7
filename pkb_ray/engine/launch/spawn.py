"""How a child process starts: a SpawnSpec, and the one function that builds a child's
environment.

A child is `python -m <module> <record>` (protocol/start.py holds the records). Nothing else
reaches a child: its environment is `child_env`'s (an allow-list, never a credential), its
descriptors are the ones the spec names, and a sandboxed child's directory, files and binds
are the spec's `sandbox`.
"""

from __future__ import annotations

import ctypes
import json
import os
import signal
import subprocess
import sys
from dataclasses import dataclass, field
from typing import Mapping

from pkb_ray.engine.env import rank_env
from pkb_ray.engine.launch.bounds import Bounds
from pkb_ray.engine.launch.plan import SandboxPlan
from pkb_ray.engine.launch.process import SandboxProcess, start_sandbox
from pkb_ray.engine.protocol import codec


@dataclass(frozen=True)
class Sandboxed:
    """Where a sandboxed child runs (process.start_sandbox): the plan, what it may see, and what its
    private directory holds before it starts."""
    plan: SandboxPlan
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
    limits: Bounds | None = None
    """What it may use (bounds.sandbox_bounds); None: one rank's."""
    gpus: tuple[int, ...] | None = None
    """With `gpu`: the node's GPUs it holds (gpus.first_gpus); None: every one."""
    cores: tuple[int, ...] = ()
    """The cores its first process (and so everything it starts, until a rank moves to its
    own) and its clean-up run on: the node's setup cores (node/cpu_pins.unpinned); (): any."""


@dataclass(frozen=True)
class SpawnSpec:
    """A child process: `python -m module <payload>`, its environment (child_env), the
    descriptors it inherits, and, for candidate code, its sandbox."""
    module: str
    payload: codec.Message
    env: Mapping[str, str]
    fds: tuple[int, ...] = ()
    sandbox: Sandboxed | None = None

    def argv(self) -> list[str]:
        return [sys.executable, "-m", self.module, json.dumps(codec.to_wire(self.payload))]


def start(spec: SpawnSpec) -> SandboxProcess:
    """Start a sandboxed child (its stdout is the pipe SandboxProcess.wait_ready reads)."""
    box = spec.sandbox
    if box is None:
        raise ValueError(f"{spec.module}: start() runs sandboxed children; use start_trusted()")
    return start_sandbox(box.plan, spec.argv(), env=dict(spec.env), pass_fds=list(spec.fds), gpu=box.gpu,
                         cache_dirs=list(box.cache_dirs), pre_files=dict(box.files), dirs=list(box.dirs),
                         binds=dict(box.binds) or None, trees=dict(box.trees) or None, limits=box.limits,
                         gpus=box.gpus, cores=box.cores)


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

def child_env(device: str, world_size: int, gpus: tuple[int, ...] | None = None, *,
              torch_cuda_arch_list: str | None = None, sandboxed: bool = True) -> dict[str, str]:
    """The environment of every child: env.rank_env's allow-list (never a credential; NVLink
    multicast forced off), and
      - its GPUs: on cuda the node's indices given (None: those this process sees), on cpu none,
        with this machine's cores shared among the `world_size` ranks;
      - TORCH_CUDA_ARCH_LIST when given (a build and its ranks must agree: another list
        changes torch's extension key and rebuilds, docs/design.md);
      - sandboxed: its caches in its own directory ({TMP}, which start_sandbox replaces
        with it) and loopback for gloo and NCCL (a sandbox has no other network);
      - trusted (a judge, the hardware probe): this interpreter's import path."""
    over: dict[str, str] = {}
    if device == "cuda":
        if gpus is not None:
            over["CUDA_VISIBLE_DEVICES"] = ",".join(map(str, gpus))
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

