"""Does torch symmetric memory still work under the worker's no-network seccomp filter?

    python scripts/device_runs/trust_v2/seccomp_symm_probe.py     (one GPU, world size 1)

Each step runs as a worker rank does: a FileStore, the fake default group, then the filter
(pkb_ray/engine/worker/no_network.py), then what a candidate calls. Prints one line per step.
"""

import os
import socket
import sys
import tempfile
from datetime import timedelta

sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..")))

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

from pkb_ray.engine.worker import no_network, process_group  # noqa: E402


def step(name, fn):
    try:
        out = fn()
        print(f"OK   {name}: {out}", flush=True)
    except Exception as e:  # noqa: BLE001 - a probe reports every failure
        print(f"FAIL {name}: {type(e).__name__}: {str(e)[:300]}", flush=True)


def refused(fn):
    def run():
        try:
            fn()
        except Exception as e:  # noqa: BLE001
            return f"refused ({type(e).__name__}: {str(e)[:160]})"
        raise AssertionError("NOT REFUSED")
    return run


def main():
    os.environ.setdefault("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1")
    d = tempfile.mkdtemp()
    store = dist.FileStore(os.path.join(d, "store"), 1)
    store.set_timeout(timedelta(seconds=60))
    cuda = torch.cuda.is_available()
    if cuda:
        torch.cuda.set_device(0)
        torch.zeros(1, device="cuda")
    process_group.init(store, 0, 1, 60.0)
    step("seccomp filter installed", lambda: no_network.install() or "yes")
    step("AF_INET socket", refused(lambda: socket.socket(socket.AF_INET).close()))
    step("AF_UNIX socket allowed", lambda: socket.socket(socket.AF_UNIX).close() or "yes")
    step("store set/get", lambda: (store.set("k", b"v"), store.get("k"))[1])
    if not cuda:
        return
    import torch.distributed._symmetric_memory as symm_mem

    def rendezvous():
        buf = symm_mem.empty(1 << 20, dtype=torch.float32, device="cuda")
        h = symm_mem.rendezvous(buf, dist.group.WORLD)
        buf.fill_(1.0)
        h.barrier(channel=0)
        return f"world_size={h.world_size} rank={h.rank}"
    step("symm_mem.empty + rendezvous + barrier", rendezvous)

    def one_shot():
        buf = symm_mem.empty(4096, dtype=torch.bfloat16, device="cuda")
        symm_mem.rendezvous(buf, dist.group.WORLD)
        buf.normal_()
        out = torch.ops.symm_mem.one_shot_all_reduce(buf, "sum", dist.group.WORLD.group_name)
        torch.cuda.synchronize()
        return f"max err {float((out - buf).abs().max()):.3g}"
    step("torch.ops.symm_mem.one_shot_all_reduce", one_shot)

    def gloo():
        g = dist.new_group(backend="gloo")
        t = torch.ones(4)
        dist.all_reduce(t, group=g)
    step("new_group(gloo) + all_reduce", refused(gloo))


if __name__ == "__main__":
    main()
