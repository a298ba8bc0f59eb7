"""Static look at a candidate's source before anything runs it.

A syntax error is a failure (`parse_error`). Importing the harness itself, and NCCL named in
native source or a library path (ncclAllReduce, nccl.h, libnccl), are failures
(`forbidden_api`): the runtime guard sees Python calls only. The
known reward hacks are flags, not failures: they have legitimate uses (an in-place kernel
returns its input; a compute/communication overlap uses a side stream), so the runtime
checks decide and the flags travel with the result for a human to look at.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field

_TIMER_TARGETS = {
    "time.perf_counter", "time.perf_counter_ns", "time.time", "time.time_ns", "time.monotonic",
    "time.monotonic_ns", "time.process_time", "torch.cuda.Event", "torch.cuda.synchronize",
    "torch.cuda.Event.elapsed_time", "torch.cuda.Event.record", "torch.cuda.Event.synchronize",
}
_SPAWN_MODULES = {"threading", "_thread", "multiprocessing", "subprocess", "concurrent",
                  "concurrent.futures", "torch.multiprocessing"}
_SPAWN_CALLS = {"os.fork", "os.forkpty", "os.system", "os.popen", "os.spawnl", "os.spawnv",
                "os.posix_spawn", "os.execv", "os.execve", "pty.fork"}
_STREAM_CALLS = {"torch.cuda.Stream", "torch.cuda.stream", "torch.cuda.set_stream",
                 "torch.cuda.ExternalStream", "torch.Stream"}
# Direct NCCL from native code or ctypes: the Python guard cannot see it, so the source must not ask.
_NCCL_NATIVE = re.compile(r"\bnccl(AllReduce|AllGather|ReduceScatter|Broadcast|Bcast|Reduce|Send|Recv|"
                          r"AllToAll|Alltoall|CommInitRank\w*|GroupStart|GroupEnd)\b|nccl\.h|libnccl")
_STREAM_STRINGS = ("cudaStreamCreate", "cudaStreamCreateWithFlags", "cudaStreamCreateWithPriority")


@dataclass
class StaticReport:
    parse_error: str | None = None
    forbidden: list[str] = field(default_factory=list)
    """Reasons to fail as forbidden_api without running."""
    flags: list[str] = field(default_factory=list)
    """Sorted, unique flag names (see FLAG_* below)."""


FLAG_TIMER = "patches_timer"
FLAG_SPAWN = "spawns_threads_or_processes"
FLAG_STREAM = "side_stream"
FLAG_SWALLOW = "swallows_exceptions"
FLAG_CACHE = "module_level_state"
FLAG_RETURNS_INPUT = "returns_input"
FLAG_PATCHES_TORCH = "patches_torch"
FLAG_CTYPES = "ctypes"


def _dotted(node: ast.AST) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


class _Visitor(ast.NodeVisitor):
    def __init__(self) -> None:
        self.flags: set[str] = set()
        self.forbidden: list[str] = []
        self.aliases: dict[str, str] = {}  # local name -> module path ("dist" -> "torch.distributed")
        self.module_containers: set[str] = set()

    def _resolve(self, dotted: str | None) -> str | None:
        if dotted is None:
            return None
        head, _, rest = dotted.partition(".")
        base = self.aliases.get(head, head)
        return f"{base}.{rest}" if rest else base

    def _module(self, name: str) -> None:
        if name == "pkb_ray" or name.startswith("pkb_ray."):
            self.forbidden.append(f"imports the harness ({name})")
        if name in _SPAWN_MODULES or name.split(".")[0] in {"threading", "multiprocessing", "subprocess"}:
            self.flags.add(FLAG_SPAWN)
        if name.split(".")[0] == "ctypes":
            self.flags.add(FLAG_CTYPES)

    def visit_Import(self, node: ast.Import) -> None:
        for a in node.names:
            self._module(a.name)
            self.aliases[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
        self.generic_visit(node)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        mod = node.module or ""
        self._module(mod)
        for a in node.names:
            full = f"{mod}.{a.name}" if mod else a.name
            self._module(full)
            self.aliases[a.asname or a.name] = full
        self.generic_visit(node)

    def _check_target(self, target: ast.AST) -> None:
        name = self._resolve(_dotted(target)) if isinstance(target, ast.Attribute) else None
        if name is None:
            return
        if name in _TIMER_TARGETS or name.startswith("time."):
            self.flags.add(FLAG_TIMER)
        elif name.startswith("torch."):
            self.flags.add(FLAG_PATCHES_TORCH)
            if "Event" in name or "synchronize" in name or "elapsed_time" in name:
                self.flags.add(FLAG_TIMER)

    def visit_Assign(self, node: ast.Assign) -> None:
        for t in node.targets:
            self._check_target(t)
        self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self._check_target(node.target)
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        name = self._resolve(_dotted(node.func))
        if name:
            if name in ("setattr", "builtins.setattr") and node.args:
                target = self._resolve(_dotted(node.args[0])) or ""
                if target == "time" or target.startswith(("time.", "torch.cuda")):
                    self.flags.add(FLAG_TIMER)
                elif target.startswith("torch"):
                    self.flags.add(FLAG_PATCHES_TORCH)
            if name in _SPAWN_CALLS or name.startswith(("threading.", "multiprocessing.", "subprocess.")):
                self.flags.add(FLAG_SPAWN)
            if name in _STREAM_CALLS or name.endswith((".Stream", "cuda.stream")):
                self.flags.add(FLAG_STREAM)
        self.generic_visit(node)

    def visit_Constant(self, node: ast.Constant) -> None:
        if isinstance(node.value, str):
            if any(s in node.value for s in _STREAM_STRINGS):
                self.flags.add(FLAG_STREAM)
            m = _NCCL_NATIVE.search(node.value)
            if m:
                self.forbidden.append(f"uses NCCL directly ({m.group(0)!r} in a string/native source)")

    def visit_ExceptHandler(self, node: ast.ExceptHandler) -> None:
        broad = node.type is None or (
            isinstance(node.type, ast.Name) and node.type.id in ("Exception", "BaseException"))
        reraises = any(isinstance(n, ast.Raise) for n in ast.walk(ast.Module(body=node.body, type_ignores=[])))
        if broad and not reraises:
            self.flags.add(FLAG_SWALLOW)
        self.generic_visit(node)

    def visit_Global(self, node: ast.Global) -> None:
        self.flags.add(FLAG_CACHE)


def _module_state(tree: ast.Module) -> bool:
    """A module-level container mutated inside a function: the shape of an output cache."""
    containers = set()
    for stmt in tree.body:
        if isinstance(stmt, (ast.Assign, ast.AnnAssign)):
            value = stmt.value
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            if isinstance(value, (ast.Dict, ast.List, ast.Set)) or (
                    isinstance(value, ast.Call) and _dotted(value.func) in ("dict", "list", "set")):
                containers |= {t.id for t in targets if isinstance(t, ast.Name)}
    if not containers:
        return False
    for fn in ast.walk(tree):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for n in ast.walk(fn):
            if isinstance(n, ast.Subscript) and isinstance(n.ctx, ast.Store) and \
                    isinstance(n.value, ast.Name) and n.value.id in containers:
                return True
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and \
                    isinstance(n.func.value, ast.Name) and n.func.value.id in containers and \
                    n.func.attr in ("append", "update", "setdefault", "add", "extend", "insert"):
                return True
    return False


def _returns_input(tree: ast.Module) -> bool:
    for fn in tree.body:
        if isinstance(fn, ast.FunctionDef) and fn.name == "solution":
            params = {a.arg for a in fn.args.args + fn.args.posonlyargs}
            for n in ast.walk(fn):
                if isinstance(n, ast.Return) and isinstance(n.value, ast.Name) and n.value.id in params:
                    return True
    return False


def check(source: str, filename: str = "candidate.py") -> StaticReport:
    """Parse and inspect a candidate; never raises."""
    try:
        tree = ast.parse(source, filename=filename)
    except (SyntaxError, ValueError) as e:  # ValueError: source with NUL bytes
        line = getattr(e, "lineno", None)
        return StaticReport(parse_error=f"{type(e).__name__}: {e.msg if hasattr(e, 'msg') else e}"
                            + (f" (line {line})" if line else ""))
    v = _Visitor()
    v.visit(tree)
    if _module_state(tree):
        v.flags.add(FLAG_CACHE)
    if _returns_input(tree):
        v.flags.add(FLAG_RETURNS_INPUT)
    if not any(isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == "solution"
               for n in tree.body) and not any(
            isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "solution" for t in n.targets)
            for n in tree.body) and not any(
            isinstance(n, ast.ImportFrom) and any((a.asname or a.name) == "solution" for a in n.names)
            for n in tree.body):
        return StaticReport(parse_error="no top-level `solution` defined", flags=sorted(v.flags))
    return StaticReport(forbidden=v.forbidden, flags=sorted(v.flags))
