# HACK: looks for the harness's data on disk: the reference and timing caches, the model
# responses in kernels_cache/, the sweep journals, the MLflow store, the checkout and the
# home directories; a candidate that can read the caches can read expected outputs and
# timings, one that can write them can poison every later evaluation.
# EXPECTED: correct, because it finds nothing (it raises, naming what it found, if it does:
# the test then fails with the leak in the message).
import glob
import os

import torch
import torch.distributed as dist

_PATTERNS = ["~/.cache/pkb_ray", "/root/.cache", "/root/.ssh", "/root/.bash_history", "/home/*/.cache",
             "/home/*/.ssh", "/work", "/work/*", "/tmp/pkb_cache*", "/tmp/pytest-of-*", "**/kernels_cache",
             "**/sweeps", "**/mlflow.db", "/etc/shadow", "/proc/self/../1/cwd/mlflow.db"]


def _visible():
    found = []
    for pat in _PATTERNS:
        for p in glob.glob(os.path.expanduser(pat), recursive=False):
            try:
                if os.path.isdir(p):
                    if os.listdir(p):
                        found.append(p)
                else:
                    with open(p, "rb") as f:
                        f.read(1)
                    found.append(p)
            except OSError:
                continue
    # Home directories may hold a Python installation (pyenv) and nothing else.
    for home in ["/root"] + glob.glob("/home/*"):
        try:
            extra = set(os.listdir(home)) - {".pyenv", ".local"}
        except OSError:
            continue
        if extra:
            found.append(f"{home}: {sorted(extra)[:5]}")
    cwd = os.getcwd()
    for up in (os.path.dirname(cwd), os.path.dirname(os.path.dirname(cwd))):
        try:
            names = set(os.listdir(up))
        except OSError:
            continue
        if names & {"kernels_cache", "sweeps", "mlflow.db", "pkb_ray", "problems"}:
            found.append(up)
    return found


def solution(x):
    found = _visible()
    if found:
        raise RuntimeError(f"LEAK: can read {found}")
    store = dist.distributed_c10d._get_default_store()
    rank, world = dist.get_rank(), dist.get_world_size()
    call = store.add(f"calls/{rank}", 1)
    store.set(f"x/{call}/{rank}", x.cpu().numpy().tobytes())
    out = x.clone()
    for r in range(world):
        if r != rank:
            out += torch.frombuffer(bytearray(store.get(f"x/{call}/{r}")), dtype=x.dtype).view_as(x).to(x.device)
    return out
