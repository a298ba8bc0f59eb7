"""Which hardware a number was measured on, and what that hardware can do.

`fingerprint()` names the machine (part of every cache key and every result). It never
initialises CUDA in the calling process (the node actor must stay CUDA-free so that the
rank processes own the GPUs): on cuda it asks nvidia-smi.

`measure_profile()` runs inside a fresh Python process (evaluation.py starts one:
`python -m pkb_ray.engine.hardware PROFILE_START`, engine/protocol/start.py) and measures
peer copy bandwidth for every GPU pair, HBM bandwidth and bf16/fp32 matmul rates, and
records the device facts the prompts state (name, memory, SMs, compute capability, the
link of every pair from `nvidia-smi topo -m`); the result is cached per fingerprint in
`<cache_dir>/hardware/`. On cpu there is no profile
and the roofline is left None: the problems' bounds are NVLink and HBM bounds, which a CPU
run has nothing to say about.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import platform
import re
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

import torch

from pkb_ray.engine.launch.gpus import visible_gpus
from pkb_ray.engine.protocol.start import ProfileStart, payload


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _nvidia_smi(*args: str) -> str:
    try:
        return subprocess.run(["nvidia-smi", *args], capture_output=True, text=True,
                              timeout=30, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def gpu_count() -> int:
    """GPUs on this machine as nvidia-smi lists them (0 without it): a count that leaves
    CUDA uninitialised in the asking process."""
    return sum(1 for line in _nvidia_smi("-L").splitlines() if line.startswith("GPU "))


def fingerprint(device: str, gpus: tuple[int, ...] | None = None) -> str:
    """A short, stable name for this machine's relevant hardware and software: on cuda, of
    the GPUs named by the node's indices (None: those this process sees)."""
    if device != "cpu" and gpus is None:
        gpus = visible_gpus()
    return _fingerprint(device, gpus)


@functools.lru_cache(maxsize=16)
def _fingerprint(device: str, gpus: tuple[int, ...] | None) -> str:
    # Cached per process: two nvidia-smi calls cost ~0.1-0.3 s of node time per evaluation.
    if device == "cpu":
        desc = f"cpu:{_cpu_model()} x{os.cpu_count()}|torch {torch.__version__}"
        return _tag("cpu", desc)
    query = ["--query-gpu=index,name,driver_version", "--format=csv,noheader"]
    if gpus:
        query += ["-i", ",".join(map(str, gpus))]
    rows = [r.split(", ") for r in _nvidia_smi(*query).splitlines() if r.strip()]
    names = sorted({r[1] for r in rows if len(r) > 1}) or ["unknown-gpu"]
    driver = rows[0][2] if rows and len(rows[0]) > 2 else "?"
    topo = _nvidia_smi("topo", "-m")
    topo_hash = hashlib.sha256(topo.encode()).hexdigest()[:8]
    desc = (f"{'+'.join(names)} x{len(rows)}|driver {driver}|torch {torch.__version__}"
            f"|cuda {torch.version.cuda}|topo {topo_hash}")
    return _tag(f"{names[0].replace(' ', '_')}x{len(rows)}", desc)


HOST_COPY_BYTES = 1 << 20


@functools.lru_cache(maxsize=1)
def host_copy_gbps() -> float:
    """This host's copy rate, GB/s of bytes copied (each read once and written once), the
    best of 50 copies of 1 MiB: the CPU plausibility floor's rate (engine/roofline.py).
    Cache-resident and the best, so the floor errs low: a rank's small tensors sit in cache,
    and a busy moment must never raise the floor."""
    src = torch.empty(HOST_COPY_BYTES, dtype=torch.uint8)
    dst = torch.empty_like(src)
    dst.copy_(src)  # first touch of the pages: not a copy rate
    best = float("inf")
    for _ in range(50):
        t = time.perf_counter()
        dst.copy_(src)
        best = min(best, time.perf_counter() - t)
    return HOST_COPY_BYTES / best / 1e9


def _tag(prefix: str, desc: str) -> str:
    return f"{prefix}-{hashlib.sha256(desc.encode()).hexdigest()[:12]}"


def l2_bytes(device_index: int = 0) -> int:
    """L2 size of a CUDA device (call only inside a rank process)."""
    props = torch.cuda.get_device_properties(device_index)
    return int(getattr(props, "L2_cache_size", 0) or 0)


@dataclass
class HardwareProfile:
    """What one node's GPUs can do, measured there (`measure_profile`). GPU indices are the
    node's visible order (rank r runs on GPU r). Fields added later default to empty, so a
    profile cached by older code still loads; `complete` says whether it has them."""

    fingerprint: str
    peer_bw_gbps: dict[str, float] = field(default_factory=dict)
    """GB/s (1e9 bytes/s) of a copy from GPU i to GPU j, key "i->j"."""
    hbm_bw_gbps: float = 0.0
    """GB/s of a device-to-device copy (bytes read + written)."""
    bf16_tflops: float = 0.0
    fp32_tflops: float = 0.0
    topology: str = ""
    """`nvidia-smi topo -m` as printed (physical indices, every GPU of the host)."""
    measured_at: float = 0.0
    gpu_name: str = ""
    gpu_count: int = 0
    """GPUs visible to the node's ranks."""
    gpu_memory_bytes: int = 0
    """Total memory of one GPU (GPU 0)."""
    sm_count: int = 0
    compute_capability: str = ""
    """"major.minor", e.g. "9.0"."""
    peer_access: dict[str, bool] = field(default_factory=dict)
    """torch.cuda.can_device_access_peer(i, j), key "i->j"."""
    links: dict[str, str] = field(default_factory=dict)
    """The link between GPU i and GPU j from `topology`, key "i->j": "NV18" (18 bonded
    NVLinks), or a PCIe path (SYS, NODE, PHB, PXB, PIX: no NVLink)."""
    torch_version: str = ""
    cuda_version: str = ""

    @property
    def complete(self) -> bool:
        """Whether it holds the device facts a prompt states (profiles cached before
        gpu_name and friends existed do not)."""
        return bool(self.gpu_name and self.sm_count and self.gpu_count)

    def min_peer_bw_gbps(self, world_size: int) -> float | None:
        vals = [v for k, v in self.peer_bw_gbps.items()
                if all(int(x) < world_size for x in k.split("->"))]
        return min(vals) if vals else None


_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def topology_links(topo: str, physical: list[int]) -> dict[str, str]:
    """The link type between visible GPUs i and j ("i->j") from `nvidia-smi topo -m`,
    whose rows and columns are the host's physical GPUs; `physical[i]` is visible GPU i's
    physical index. Pairs the matrix does not cover are left out."""
    lines = [_ANSI.sub("", ln) for ln in topo.splitlines()]
    header = next((ln.split() for ln in lines if ln.split()[:1] == ["GPU0"] and "X" not in ln.split()),
                  None)
    if header is None:
        return {}
    columns = [c for c in header if re.fullmatch(r"GPU\d+", c)]
    matrix: dict[int, dict[int, str]] = {}
    for ln in lines:
        cells = ln.split("\t") if "\t" in ln else ln.split()
        cells = [c.strip() for c in cells]
        if not cells or not re.fullmatch(r"GPU\d+", cells[0]) or len(cells) <= len(columns):
            continue
        matrix[int(cells[0][3:])] = {int(c[3:]): cells[1 + k] for k, c in enumerate(columns)}
    out = {}
    for i, pi in enumerate(physical):
        for j, pj in enumerate(physical):
            if i != j and pj in matrix.get(pi, {}):
                out[f"{i}->{j}"] = matrix[pi][pj]
    return out


def profile_path(cache_dir: str | Path, fp: str) -> Path:
    return Path(cache_dir).expanduser() / "hardware" / f"{fp}.json"


def load_profile(cache_dir: str | Path, fp: str) -> HardwareProfile | None:
    p = profile_path(cache_dir, fp)
    if not p.exists():
        return None
    try:
        return profile_from_dict(json.loads(p.read_text()))
    except (ValueError, TypeError, AttributeError):
        return None


def profile_from_dict(d: dict) -> HardwareProfile:
    """A profile from its JSON form; keys this version does not know are ignored, keys it
    added since are defaulted (a profile of older code loads, `complete` False)."""
    known = {f.name for f in fields(HardwareProfile)}
    return HardwareProfile(**{k: v for k, v in d.items() if k in known})


def save_profile(cache_dir: str | Path, prof: HardwareProfile) -> None:
    p = profile_path(cache_dir, prof.fingerprint)
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_suffix(f".tmp{os.getpid()}")
    tmp.write_text(json.dumps(asdict(prof), indent=1))
    tmp.replace(p)


def _time_cuda(fn, reps: int) -> float:
    """Median seconds of fn() over reps, after one warm-up, using CUDA events."""
    fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        torch.cuda.synchronize()
        times.append(s.elapsed_time(e) / 1e3)
    times.sort()
    return times[len(times) // 2]


def _peer_copy_gbps(src: torch.Tensor, dst: torch.Tensor, i: int, j: int, reps: int = 10) -> float:
    """GB/s of back-to-back copies GPU i -> GPU j, timed on the host with both devices
    synchronized (a cross-device copy involves two streams, so one device's events could
    miss part of it); 10 x 256 MB at ~400 GB/s is ~6.5 ms against ~20 us of host overhead."""
    dst.copy_(src)
    best = float("inf")
    for _ in range(3):
        torch.cuda.synchronize(i)
        torch.cuda.synchronize(j)
        t0 = time.perf_counter()
        for _ in range(reps):
            dst.copy_(src, non_blocking=True)
        torch.cuda.synchronize(i)
        torch.cuda.synchronize(j)
        best = min(best, time.perf_counter() - t0)
    return reps * src.numel() * src.element_size() / best / 1e9


def _physical_indices(n: int) -> list[int]:
    """nvidia-smi's index of each visible GPU (it ignores CUDA_VISIBLE_DEVICES, so its
    topology matrix covers the whole host)."""
    try:
        ids = visible_gpus()
    except ValueError:  # not whole GPUs: the pairs are numbered as CUDA numbers them
        ids = None
    return list(ids[:n]) if ids else list(range(n))


def measure_profile(fp: str) -> HardwareProfile:
    """Measure on every visible GPU pair (run in a fresh process that sees the node's GPUs).
    About 1 s per pair plus ~3 s; 256 MB copies and 8192^3 matmuls."""
    n = torch.cuda.device_count()
    props = torch.cuda.get_device_properties(0)
    prof = HardwareProfile(fingerprint=fp, topology=_nvidia_smi("topo", "-m"), measured_at=time.time(),
                           gpu_name=props.name, gpu_count=n, gpu_memory_bytes=int(props.total_memory),
                           sm_count=int(props.multi_processor_count),
                           compute_capability=f"{props.major}.{props.minor}",
                           torch_version=torch.__version__, cuda_version=torch.version.cuda or "")
    prof.links = topology_links(prof.topology, _physical_indices(n))
    prof.peer_access = {f"{i}->{j}": bool(torch.cuda.can_device_access_peer(i, j))
                        for i in range(n) for j in range(n) if i != j}
    nbytes = 256 << 20
    bufs = [torch.empty(nbytes, dtype=torch.uint8, device=f"cuda:{i}") for i in range(n)]
    for i in range(n):
        for j in range(n):
            if i == j:
                continue
            prof.peer_bw_gbps[f"{i}->{j}"] = _peer_copy_gbps(bufs[i], bufs[j], i, j)
    big = torch.empty(1 << 30, dtype=torch.uint8, device="cuda:0")
    dst = torch.empty_like(big)
    with torch.cuda.device(0):
        s = _time_cuda(lambda: dst.copy_(big), 10)
        prof.hbm_bw_gbps = 2 * big.numel() / s / 1e9
        del big, dst
        m = 8192
        for dtype, attr in ((torch.bfloat16, "bf16_tflops"), (torch.float32, "fp32_tflops")):
            a = torch.randn(m, m, device="cuda:0", dtype=dtype)
            b = torch.randn(m, m, device="cuda:0", dtype=dtype)
            s = _time_cuda(lambda: a @ b, 5)
            setattr(prof, attr, 2 * m ** 3 / s / 1e12)
    return prof


def main() -> int:
    """In the fresh process: measure, and print the profile as the last line of output."""
    print(json.dumps(asdict(measure_profile(payload(ProfileStart).fingerprint))), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
