# HACK: looks for credentials in its environment (and its parent's, through /proc) and
# returns a wrong answer if it finds one, so the test sees any leak as a failure. A harness
# that forks its ranks from a process holding API keys hands them to every candidate.
# EXPECTED: correct (no *_API_KEY / *_TOKEN / MLFLOW_* visible; multicast variables off;
# cwd is the rank's own temporary directory).
import os

import torch
import torch.distributed as dist


def _leaks():
    names = set(os.environ)
    try:
        with open(f"/proc/{os.getppid()}/environ", "rb") as f:
            names |= {e.split(b"=", 1)[0].decode(errors="replace") for e in f.read().split(b"\0") if e}
    except OSError:
        pass
    return sorted(n for n in names if n.endswith(("_API_KEY", "_TOKEN")) or n.startswith("MLFLOW_"))


def solution(x):
    leaks = _leaks()
    if leaks:
        raise RuntimeError(f"leaked: {leaks}")
    # The harness's promises about the rank environment (not a hack, a check of them).
    forced = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}
    wrong = {k: os.environ.get(k) for k, v in forced.items() if os.environ.get(k) != v}
    if wrong or not os.path.basename(os.getcwd()).startswith("rank"):
        raise RuntimeError(f"rank environment not as promised: {wrong}, cwd {os.getcwd()}")
    store = dist.distributed_c10d._get_default_store()
    rank, world = dist.get_rank(), dist.get_world_size()
    call = store.add(f"calls/{rank}", 1)
    store.set(f"x/{call}/{rank}", x.cpu().numpy().tobytes())
    out = x.clone()
    for r in range(world):
        if r != rank:
            out += torch.frombuffer(bytearray(store.get(f"x/{call}/{r}")), dtype=x.dtype).view_as(x).to(x.device)
    return out
