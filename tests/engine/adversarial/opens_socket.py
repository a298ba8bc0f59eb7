# HACK: opens network connections: to the harness's own services on this machine (a store
# the judges meet on, a tracking server, Ray) by scanning loopback ports, and to the outside.
# With a connection it could read or write what the harness keeps, or ship the inputs out.
# EXPECTED: correct, because it cannot even open an AF_INET socket (the worker's seccomp
# filter), and under bubblewrap its own network namespace holds a loopback with nothing on
# it; it raises, naming the connections it made, if anything does.
import socket

import torch
import torch.distributed as dist


def _reachable():
    found = []
    for host, ports in (("127.0.0.1", [6379, 8265, 5000, 8080, 29500] + list(range(30000, 30050))),
                        ("1.1.1.1", [53, 443]), ("8.8.8.8", [53])):
        for port in ports:
            try:
                s = socket.socket()
            except OSError:
                return found  # no socket at all: nothing can be reached
            s.settimeout(0.05)
            try:
                s.connect((host, port))
                found.append(f"{host}:{port}")
            except OSError:
                pass
            finally:
                s.close()
    return found


def solution(x):
    found = _reachable()
    if found:
        raise RuntimeError(f"LEAK: connected to {found}")
    store = dist.distributed_c10d._get_default_store()
    rank, world = dist.get_rank(), dist.get_world_size()
    call = store.add(f"calls/{rank}", 1)
    store.set(f"x/{call}/{rank}", x.cpu().numpy().tobytes())
    out = x.clone()
    for r in range(world):
        if r != rank:
            out += torch.frombuffer(bytearray(store.get(f"x/{call}/{r}")), dtype=x.dtype).view_as(x).to(x.device)
    return out
