"""A forkserver that is still alive but refuses connections (how one that a candidate
killed looks while it is exiting on a loaded machine; seen in CI) costs no evaluation:
the launcher stops it, starts a fresh one and the next candidate is evaluated."""

import multiprocessing.forkserver as mp_forkserver
import os
import socket

from pkb_ray.engine import launcher

from .conftest import CANDIDATES


def test_refusing_forkserver_is_replaced_and_the_evaluation_runs(run_eval, tmp_path):
    assert run_eval(CANDIDATES / "store_exchange.py").correct  # a forkserver is up
    fs = mp_forkserver._forkserver
    old_pid = fs._forkserver_pid
    # Point multiprocessing at a socket nobody listens on, while the old server process
    # stays alive: waitpid(WNOHANG) says "alive", connect() says "refused".
    dead = str(tmp_path / "refusing.sock")
    with socket.socket(socket.AF_UNIX) as s:
        s.bind(dead)
    real_address = fs._forkserver_address
    fs._forkserver_address = dead
    try:
        res = run_eval(CANDIDATES / "store_exchange.py")
    finally:
        if os.path.exists(real_address) and fs._forkserver_address != real_address:
            os.unlink(real_address)  # the old server's socket, left behind by the swap
    assert res.correct, (res.message, res.log[-2000:])
    assert fs._forkserver_pid not in (None, old_pid)  # a new forkserver took over
    assert launcher._forkserver_popen.poll() is None
