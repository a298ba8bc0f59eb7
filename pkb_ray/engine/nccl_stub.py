"""A stand-in for libnccl inside the sandbox: every NCCL entry point refuses.

The worker's process group cannot communicate, and the Python guard refuses the torch
APIs; neither sees a candidate that loads libnccl itself (ctypes, or a native extension
that calls ncclCommInitRank) and builds its own communicator. dlsym on a library handle
bypasses LD_PRELOAD, so interposing is not enough: under bubblewrap the real library file
is replaced by this one (a read-only bind over its path). Torch still loads (it needs the
symbols, not working NCCL: the worker never makes an NCCL process group). A refused call
writes its name to $PKB_WORKDIR/nccl_refused, which the node reads: forbidden_api.

Built once per node with the system C compiler, exporting the real library's nccl*
symbols (read from its ELF dynamic symbol table) and the API's documented names.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import threading
from pathlib import Path

from pkb_ray.engine import launch

MARKER = "nccl_refused"
_API = """ncclGetVersion ncclGetUniqueId ncclCommInitRank ncclCommInitRankConfig ncclCommInitAll
ncclCommInitRankScalable ncclCommSplit ncclCommShrink ncclCommFinalize ncclCommDestroy ncclCommAbort
ncclCommGetAsyncError ncclCommCount ncclCommCuDevice ncclCommUserRank ncclCommRegister
ncclCommDeregister ncclMemAlloc ncclMemFree ncclRedOpCreatePreMulSum ncclRedOpDestroy ncclReduce
ncclBcast ncclBroadcast ncclAllReduce ncclReduceScatter ncclAllGather ncclAlltoAll ncclGather
ncclScatter ncclSend ncclRecv ncclGroupStart ncclGroupEnd ncclGroupSimulateEnd ncclGetErrorString
ncclGetLastError ncclCommWindowRegister ncclCommWindowDeregister ncclCommInitRankScalable
ncclCommQueryProperties ncclResetDebugInit""".split()
_STRINGS = {"ncclGetErrorString", "ncclGetLastError"}


def real_libraries() -> list[str]:
    """The libnccl files torch's CUDA build would load (none on a CPU build)."""
    try:
        import torch
    except ImportError:
        return []
    if not torch.cuda.is_available() and getattr(torch.version, "cuda", None) is None:
        return []
    found: set[str] = set()
    roots = [Path(p) for p in sys.path if p and os.path.isdir(p)]
    for root in roots:
        for cand in list((root / "nvidia" / "nccl" / "lib").glob("libnccl.so*")) + \
                list((root / "torch" / "lib").glob("libnccl.so*")):
            found.add(str(cand.resolve()))
    try:
        out = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True, timeout=10).stdout
        for line in out.splitlines():
            if "libnccl.so" in line and "=>" in line:
                found.add(str(Path(line.split("=>")[1].strip()).resolve()))
    except (OSError, subprocess.SubprocessError):
        pass
    return sorted(p for p in found if os.path.isfile(p))


def _symbols(lib: str) -> list[str]:
    """The nccl* functions `lib` defines, read from its ELF dynamic symbol table (no
    binutils needed), plus the API's names in case the file cannot be read."""
    import struct

    names = set(_API)
    try:
        data = Path(lib).read_bytes()
        if data[:4] == b"\x7fELF" and data[4] == 2:  # ELF64, little-endian on x86-64
            shoff, = struct.unpack_from("<Q", data, 0x28)
            shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
            sections = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
            for sh in sections:
                if sh[1] != 11:  # SHT_DYNSYM
                    continue
                strtab = sections[sh[6]]
                for off in range(sh[4], sh[4] + sh[5], 24):
                    st_name, st_info, _, st_shndx = struct.unpack_from("<IBBH", data, off)
                    if st_shndx == 0 or (st_info & 0xF) != 2:  # undefined, or not a function
                        continue
                    start = strtab[4] + st_name
                    name = data[start:data.index(b"\0", start)].decode(errors="replace")
                    if re.fullmatch(r"p?nccl\w+", name):
                        names.add(name)
    except (OSError, struct.error, ValueError, IndexError):
        pass
    return sorted(names)


def _version(lib: str) -> int:
    try:
        import ctypes
        v = ctypes.c_int()
        if ctypes.CDLL(lib).ncclGetVersion(ctypes.byref(v)) == 0:
            return v.value
    except OSError:
        pass
    return 22800


def _source(names: list[str], version: int) -> str:
    lines = ["#include <stdio.h>", "#include <stdlib.h>", "#include <string.h>", "#include <unistd.h>",
             "#include <fcntl.h>",
             "static void pkb_refuse(const char* name) {",
             "  const char* dir = getenv(\"PKB_WORKDIR\"); char path[4096];",
             f"  snprintf(path, sizeof path, \"%s/{MARKER}\", dir ? dir : \"/tmp\");",
             "  int fd = open(path, O_WRONLY | O_CREAT | O_APPEND, 0600);",
             "  if (fd >= 0) { write(fd, name, strlen(name)); write(fd, \"\\n\", 1); close(fd); }",
             "  fprintf(stderr, \"pkb: NCCL refused: %s (no NCCL may run in a candidate)\\n\", name); }",
             f"int ncclGetVersion(int* v) {{ if (v) *v = {version}; return 0; }}",
             "int pncclGetVersion(int* v) { return ncclGetVersion(v); }"]
    for n in names:
        if n in ("ncclGetVersion", "pncclGetVersion"):
            continue
        if n.lstrip("p") in _STRINGS:
            lines.append(f"const char* {n}() {{ return \"NCCL is not available to candidates\"; }}")
        else:
            # ncclInvalidUsage (5): every call fails, and says why.
            lines.append(f"int {n}() {{ pkb_refuse(\"{n}\"); return 5; }}")
    return "\n".join(lines) + "\n"


_built: dict[str, dict[str, str]] = {}
_built_lock = threading.Lock()


def build(cache_dir: str) -> dict[str, str]:
    """{real library path: stub path} to bind over, for this node (empty when there is no
    NCCL to hide or no compiler to build the stub: the sandbox description says so).

    Made once per process and kept while its stub exists (a run root removed at a node
    actor's close takes it): reading every libnccl's symbols costs a read of each whole
    library, which a node's GPU groups would otherwise do at once for every evaluation."""
    with _built_lock:
        kept = _built.get(cache_dir)
        if kept is not None and all(Path(stub).exists() for stub in kept.values()):
            return dict(kept)
        made = _build(cache_dir)
        _built[cache_dir] = made
        return dict(made)


def _build(cache_dir: str) -> dict[str, str]:
    libs = real_libraries()
    if not libs:
        return {}
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        return {}
    names = sorted({n for lib in libs for n in _symbols(lib)})
    src = _source(names, _version(libs[0]))
    key = hashlib.sha256(src.encode()).hexdigest()[:16]
    failed: list[str] = []

    def compile_into(d: Path) -> None:
        (d / "stub.c").write_text(src)
        r = subprocess.run([cc, "-shared", "-fPIC", "-O1", "-o", str(d / "libnccl.so.2"), str(d / "stub.c")],
                           capture_output=True, text=True, timeout=120)
        if r.returncode != 0:
            failed.append(r.stderr[-500:])

    # Where the sandbox user may read it (the cache may lie under a home it cannot enter).
    stub = Path(launch.public_dir(f"nccl-stub-{key}", compile_into)) / "libnccl.so.2"
    if failed or not stub.exists():
        return {}
    return {lib: str(stub) for lib in libs}
