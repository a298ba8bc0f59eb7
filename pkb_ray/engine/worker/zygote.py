"""The first process inside a candidate's sandbox: import torch once, fork one rank per GPU.

    python -m pkb_ray.engine.worker.zygote   (environment: PKB_WORKER_FDS, PKB_WORKDIR)

It is started fresh for every candidate (never forked from a judge, never holding a
secret), and may be started ahead of its candidate so the torch import (1-3 s) is off the
evaluation's clock. Each rank gets the channel to its own judge and a log file; the zygote
keeps no channel itself, reaps the ranks and writes how each ended to its own log (what
the node quotes when a rank dies without a word).
"""

from __future__ import annotations

import faulthandler
import os
import signal
import socket
import sys


def _rank_main(r: int, fd: int, workdir: str) -> None:
    log = os.open(os.path.join(workdir, f"rank{r}.log"), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    os.dup2(log, 1)
    os.dup2(log, 2)
    os.close(log)
    faulthandler.enable()  # a segfault leaves its Python stack in the rank's log
    rank_dir = os.path.join(workdir, f"rank{r}")
    os.makedirs(rank_dir, exist_ok=True)
    os.chdir(rank_dir)
    from pkb_ray.engine.worker.rank import Rank

    code = 0
    try:
        Rank(socket.socket(fileno=fd), workdir).serve()
    except BaseException:  # noqa: BLE001
        import traceback
        traceback.print_exc()
        code = 1
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        # No interpreter teardown: process-group destructors can block on dead peers.
        os._exit(code)


def main() -> int:
    fds = [int(x) for x in os.environ["PKB_WORKER_FDS"].split(",")]
    workdir = os.environ["PKB_WORKDIR"]
    import torch  # noqa: F401 - the point of a zygote: pay the import once, before forking
    import torch.distributed  # noqa: F401

    import pkb_ray.engine.worker.rank  # noqa: F401
    print("ready", flush=True)
    pids = {}
    for r, fd in enumerate(fds):
        pid = os.fork()
        if pid == 0:
            for other in fds:
                if other != fd:
                    os.close(other)
            _rank_main(r, fd, workdir)
        pids[pid] = r
    for fd in fds:
        os.close(fd)
    while pids:
        try:
            pid, status = os.wait()
        except ChildProcessError:
            break
        r = pids.pop(pid, None)
        if r is None:
            continue
        if os.WIFSIGNALED(status):
            sig = os.WTERMSIG(status)
            name = signal.Signals(sig).name if sig in signal.Signals._value2member_map_ else str(sig)
            print(f"rank {r} killed by signal {name}", file=sys.stderr, flush=True)
        else:
            print(f"rank {r} exited with code {os.WEXITSTATUS(status)}", file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
