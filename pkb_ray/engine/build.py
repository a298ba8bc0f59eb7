"""Compile a candidate's CUDA extensions on a CPU worker, ahead of GPU time, in a sandbox.

A cold `load_inline` of a 30-line kernel takes 47.6 s on the H200 node, almost all of it
the torch headers; a warm load from TORCH_EXTENSIONS_DIR takes 0.10 s, and the compile
needs no GPU when TORCH_CUDA_ARCH_LIST matches the ranks' (docs/design.md). So the candidate is
imported once in a sandbox (launch/: importing it runs its module code) with no GPU
device and its own extension directory; what it built is then copied into the extension
cache under the hash of its source, and the evaluation copies it into the worker's sandbox.
No candidate ever writes where another candidate's build is kept. A compiler error is a
`compile_error` with the trimmed log.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

from pkb_ray.engine import launch, static_check
from pkb_ray.engine.protocol import codec
from pkb_ray.engine.wire.frames import ProtocolError
from pkb_ray.records import FailureClass

_BUILD_LOG_CHARS = 8000
_COMPILE_MARKERS = ("Error building extension", "ninja: build stopped", "nvcc fatal", "compilation terminated")


@dataclass
class BuildResult:
    ok: bool
    failure: FailureClass | None = None
    message: str = ""
    log: str = ""
    compile_seconds: float = 0.0
    extensions_dir: str = ""
    flags: list[str] = field(default_factory=list)


def extensions_dir(cache_dir: str, torch_cuda_arch_list: str) -> Path:
    """Shared extension cache, one per arch list (a different list changes torch's build key)."""
    key = re.sub(r"[^0-9A-Za-z.+_-]+", "_", torch_cuda_arch_list.strip()) or "default"
    return Path(cache_dir).expanduser() / "extensions" / f"arch-{key}"


def candidate_extensions_dir(cache_dir: str, torch_cuda_arch_list: str, source: str) -> Path:
    """Where one candidate's build is kept: by the hash of its source."""
    return extensions_dir(cache_dir, torch_cuda_arch_list) / hashlib.sha256(source.encode()).hexdigest()[:20]


def prebuild(candidate_source: str, torch_cuda_arch_list: str, cache_dir: str,
             device: str = "cuda", timeout_s: float = 900.0, sandbox_mode: str = "auto",
             sandbox_user: str = launch.DEFAULT_USER) -> BuildResult:
    """Static check, then (on cuda) import the candidate once, sandboxed, to build it."""
    report = static_check.check(candidate_source)
    if report.parse_error:
        return BuildResult(False, FailureClass.PARSE_ERROR, report.parse_error, flags=report.flags)
    if report.forbidden:
        return BuildResult(False, FailureClass.FORBIDDEN_API, "; ".join(report.forbidden), flags=report.flags)
    dst = candidate_extensions_dir(cache_dir, torch_cuda_arch_list, candidate_source)
    if device != "cuda" or not _needs_build(candidate_source):
        return BuildResult(True, flags=report.flags)
    if (dst / ".complete").exists():
        return BuildResult(True, extensions_dir=str(dst), flags=report.flags)
    # The ranks' arch list, and no GPU: the compile needs none (docs/design.md).
    env = launch.child_env("cuda", 1, (), torch_cuda_arch_list=torch_cuda_arch_list)
    box = launch.Sandboxed(launch.plan_sandbox(sandbox_mode, sandbox_user), (cache_dir,), gpu=False,
                          files={"candidate.py": candidate_source})
    t0 = time.monotonic()
    proc = launch.start(launch.SpawnSpec("pkb_ray.engine.worker.build_probe",
                                         launch.BuildStart(candidate_file="candidate.py"), env, sandbox=box))
    try:
        try:
            stdout, _ = proc.popen.communicate(timeout=timeout_s)
        except Exception:  # noqa: BLE001 - TimeoutExpired
            return BuildResult(False, FailureClass.TIMEOUT, f"build did not finish in {timeout_s:.0f} s",
                               compile_seconds=time.monotonic() - t0, flags=report.flags)
        seconds = time.monotonic() - t0
        try:  # the candidate's process wrote it: it can only ever fail itself
            probed = codec.decode(json.loads((stdout or b"").decode(errors="replace").strip().splitlines()[-1]),
                              (launch.BuildProbed,))
            ok, tb = probed.ok, probed.log  # type: ignore[attr-defined]
        except (ValueError, IndexError, RecursionError, ProtocolError):
            ok, tb = False, ""
        log = _trim((stdout or b"").decode(errors="replace")[:-2000] + proc.log_tail("zygote.log") + tb)
        if not ok and any(k in log for k in _COMPILE_MARKERS):
            return BuildResult(False, FailureClass.COMPILE_ERROR, _compile_message(log), log=log,
                               compile_seconds=seconds, flags=report.flags)
        built = Path(proc.workdir) / "ext"
        tmp = dst.with_name(dst.name + f".tmp{time.monotonic_ns()}")
        proc.kill()  # nothing the candidate started may change what is copied while it is
        try:
            launch.copy_regular_tree(str(built), str(tmp))  # what the candidate's import left there
        except launch.TreeRefused as exc:
            shutil.rmtree(tmp, ignore_errors=True)
            return BuildResult(False, FailureClass.RUNTIME_ERROR, f"the build's output was refused: {exc}",
                               log=log, compile_seconds=seconds, flags=report.flags)
        (tmp / ".complete").write_text("")
        try:
            tmp.replace(dst)
        except OSError:  # built by another worker meanwhile: theirs is as good
            shutil.rmtree(tmp, ignore_errors=True)
        # Anything else (no GPU here, no process group) is for the ranks to find out.
        return BuildResult(True, log=log, compile_seconds=seconds, extensions_dir=str(dst), flags=report.flags)
    finally:
        proc.cleanup()
        launch.close_run_root_if_idle()  # a Ray worker may be ended without its exit handlers


def _needs_build(source: str) -> bool:
    return any(k in source for k in ("load_inline", "cpp_extension", "_compile_kernel", "triton"))


def _trim(log: str) -> str:
    return log if len(log) <= _BUILD_LOG_CHARS else "...\n" + log[-_BUILD_LOG_CHARS:]


def _compile_message(log: str) -> str:
    """The compiler's first error line (gcc/nvcc "file:line: error: ..."), else any error line."""
    lines = log.splitlines()
    for pred in (lambda l: ": error" in l, lambda l: "error:" in l.lower(), lambda l: "Error" in l):
        for line in lines:
            if pred(line):
                return line.strip()[:300]
    return "extension build failed"
