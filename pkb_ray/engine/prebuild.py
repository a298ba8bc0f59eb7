"""Compile a candidate's CUDA extensions on a CPU worker, ahead of GPU time.

A cold `load_inline` of a 30-line kernel takes 47.6 s on the H200 node, almost all of it
the torch headers; a warm load from TORCH_EXTENSIONS_DIR takes 0.10 s, and the compile
needs no GPU when TORCH_CUDA_ARCH_LIST matches the ranks' (DESIGN.md). So the candidate is
imported once in a scrubbed subprocess with CUDA_VISIBLE_DEVICES="" and
TORCH_EXTENSIONS_DIR=<cache_dir>/extensions/<arch list>: load_inline compiles into the
shared cache, and the ranks (same directory, same arch list) find it built. Whatever fails
after compilation (no GPU, no process group) does not matter here; a compiler error is a
`compile_error` with the trimmed log.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from pkb_ray.engine import static_check
from pkb_ray.engine.env import rank_env
from pkb_ray.records import FailureClass

_BUILD_LOG_CHARS = 8000

# Runs in the subprocess: import the candidate, report how the import ended.
_DRIVER = r"""
import importlib.util, json, sys, traceback
path, out = sys.argv[1], sys.argv[2]
res = {"ok": True, "compile_error": False, "log": ""}
try:
    spec = importlib.util.spec_from_file_location("pkb_candidate", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["pkb_candidate"] = mod
    spec.loader.exec_module(mod)
except BaseException as e:
    tb = traceback.format_exc()
    res["ok"] = False
    res["log"] = tb
    res["compile_error"] = ("Error building extension" in tb or "ninja: build stopped" in tb
                            or "CalledProcessError" in tb and "cpp_extension" in tb
                            or "nvrtc" in tb.lower() and "compil" in tb.lower())
with open(out, "w") as f:
    json.dump(res, f)
"""


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


def prebuild(candidate_source: str, torch_cuda_arch_list: str, cache_dir: str,
             device: str = "cuda", timeout_s: float = 900.0) -> BuildResult:
    """Static check, then (on cuda) import the candidate once to fill the extension cache."""
    report = static_check.check(candidate_source)
    ext_dir = extensions_dir(cache_dir, torch_cuda_arch_list)
    if report.parse_error:
        return BuildResult(False, FailureClass.PARSE_ERROR, report.parse_error, flags=report.flags)
    if report.forbidden:
        return BuildResult(False, FailureClass.FORBIDDEN_API, "; ".join(report.forbidden), flags=report.flags)
    if device != "cuda" or not _needs_build(candidate_source):
        return BuildResult(True, extensions_dir=str(ext_dir), flags=report.flags)
    ext_dir.mkdir(parents=True, exist_ok=True)
    work = tempfile.mkdtemp(prefix="pkb_build_")
    t0 = time.monotonic()
    try:
        cand = Path(work) / "candidate.py"
        cand.write_text(candidate_source)
        out = Path(work) / "result.json"
        env = rank_env(CUDA_VISIBLE_DEVICES="", TORCH_EXTENSIONS_DIR=str(ext_dir),
                       TORCH_CUDA_ARCH_LIST=torch_cuda_arch_list)
        try:
            proc = subprocess.run([sys.executable, "-c", _DRIVER, str(cand), str(out)], cwd=work,
                                  env=env, capture_output=True, text=True, timeout=timeout_s,
                                  start_new_session=True)
        except subprocess.TimeoutExpired:
            return BuildResult(False, FailureClass.TIMEOUT, f"build did not finish in {timeout_s:.0f} s",
                               compile_seconds=time.monotonic() - t0, extensions_dir=str(ext_dir),
                               flags=report.flags)
        seconds = time.monotonic() - t0
        try:
            res = json.loads(out.read_text())
        except (OSError, ValueError):
            res = {"ok": False, "compile_error": False, "log": ""}
        log = _trim((proc.stdout or "") + (proc.stderr or "") + res.get("log", ""))
        if res.get("compile_error"):
            return BuildResult(False, FailureClass.COMPILE_ERROR, _compile_message(log), log=log,
                               compile_seconds=seconds, extensions_dir=str(ext_dir), flags=report.flags)
        # Anything else (no GPU here, no process group) is for the ranks to find out.
        return BuildResult(True, log=log, compile_seconds=seconds, extensions_dir=str(ext_dir),
                           flags=report.flags)
    finally:
        shutil.rmtree(work, ignore_errors=True)


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
