# HACK: answers honestly while a fork bomb runs beside it: a helper whose every process forks
# again as fast as it can, retrying when a fork fails, for 20 s. With no bound on processes
# it takes every pid of the host (pid_max 32768 on the CPU machines, RLIMIT_NPROC 96365 for
# the sandbox's user above it): the judge, the next candidate's sandbox and a neighbouring
# GPU group cannot fork, and their evaluations fail as harness errors.
# EXPECTED: resource_limit, naming pids.max: the bomb stops at its sandbox's bound, and the
# whole group is killed with the sandbox. Run only where that bound holds (a cgroup with
# pids): tests/engine/test_adversarial_cpu.py skips it elsewhere.
import subprocess
import sys

_HELPER = r"""
import os, sys, time
end, first = time.monotonic() + 20, os.getpid()
while time.monotonic() < end:
    try:
        os.fork()
    except OSError:
        if os.getpid() == first and not sys.stdout.closed:
            print("bounded", flush=True)  # its rank may go on: the bomb does
            sys.stdout.close()
        time.sleep(0.01)
os._exit(0)
"""

_bomb = subprocess.Popen([sys.executable, "-c", _HELPER], stdout=subprocess.PIPE, stdin=subprocess.DEVNULL)
_bomb.stdout.readline()  # once it meets a bound (or after 20 s), the bomb still going

# pkb:include ../fixtures/candidates/store_exchange.py
