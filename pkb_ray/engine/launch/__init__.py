"""The launcher: how the node starts every child process, and the sandbox candidate code runs in.

Runs in the node's processes (the node actor, `pkb eval`, a build worker, the agent), never
in a sandbox: a sandboxed child reads its start record from engine/protocol/start.py and imports
nothing here (tests/test_import_graph.py checks it). By job:

  plan       what sandbox this machine allows (bwrap+uid, bwrap, uid, none), found once
  mounts     what a sandbox sees: bubblewrap's binds, its import paths, the sized tmpfs
  roots      where sandboxes live on the host, and removing whatever they leave
  owners     names stamped with their process, to find what a killed one left
  process    a running sandbox: start, stop, read its logs, remove it
  bounds     what a sandbox may use (processes, memory), held by its cgroup or by rlimits
  gpus       which GPUs a sandbox holds, and hiding the others
  files      reading what a sandbox wrote and copying trees in and out, trusting nothing
  spawn      SpawnSpec and child_env: the one way into a child, sandboxed or trusted
"""

from __future__ import annotations

from pkb_ray.engine.launch.bounds import Bounds, SandboxBounds, node_groups, sandbox_bounds
from pkb_ray.engine.launch.files import (MAX_TREE_BYTES, MAX_TREE_FILES, TreeRefused, copy_regular_tree,
                                         read_sandbox_file, sandbox_file_bytes)
from pkb_ray.engine.launch.gpus import GpuView, first_gpus, node_gpus, view, visible_gpus
from pkb_ray.engine.launch.mounts import PKG_MOUNT, SHM_DIR, TMP_QUOTA_FILES, import_paths
from pkb_ray.engine.launch.plan import DEFAULT_USER, KINDS, TMP_QUOTA_BYTES, SandboxError, SandboxPlan, plan_sandbox
from pkb_ray.engine.launch.process import SandboxProcess, copy_tree_in, start_sandbox
from pkb_ray.engine.launch.roots import (RUN_ROOT_PREFIX, close_run_root, close_run_root_if_idle, exit_on_sigterm,
                                         package_copy, public_dir, remove_tree, run_root)
from pkb_ray.engine.launch.spawn import Sandboxed, SpawnSpec, child_env, start, start_trusted
from pkb_ray.engine.protocol.start import (AgentStart, BuildProbed, BuildStart, JudgeStart, ProfileStart, WorkerStart,
                                       payload)

__all__ = [
    "DEFAULT_USER", "KINDS", "MAX_TREE_BYTES", "MAX_TREE_FILES", "PKG_MOUNT", "RUN_ROOT_PREFIX", "SHM_DIR",
    "TMP_QUOTA_BYTES", "TMP_QUOTA_FILES",
    "AgentStart", "Bounds", "GpuView", "SandboxBounds", "BuildProbed", "BuildStart", "JudgeStart", "ProfileStart", "Sandboxed", "SandboxError",
    "SandboxPlan", "SandboxProcess", "SpawnSpec", "TreeRefused", "WorkerStart",
    "child_env", "close_run_root", "close_run_root_if_idle", "copy_regular_tree", "copy_tree_in",
    "exit_on_sigterm", "first_gpus", "import_paths", "node_gpus", "view", "visible_gpus", "node_groups", "sandbox_bounds", "package_copy", "payload", "plan_sandbox",
    "public_dir", "read_sandbox_file", "remove_tree", "run_root", "sandbox_file_bytes", "start",
    "start_sandbox", "start_trusted",
]
