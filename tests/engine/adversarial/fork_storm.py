# HACK: answers honestly, but each rank leaves 1500 sleeping processes behind at import (a
# small helper interpreter forks them, so each fork is cheap), and carries on when a fork
# fails. A harness that stops a rank's processes one SIGSTOP at a time between the timing
# halves (judge/freezer.py without a group) spends seconds walking and signalling them while
# the clock runs: 500 per rank were scored correct at 0.456, 6.36 and 0.148 against an honest
# ~0.06 (2-core machine), the stops and resumes taking 1.9-2.4 s per evaluation. With no
# bound on processes, a sandbox also takes the host's pids from the judge and the next one.
# EXPECTED: resource_limit, naming pids.max: the sandbox's group refuses the forks past its
# bound, which honest code never reaches, and freezing a group is one write however many
# processes it holds.
import subprocess
import sys

_HELPER = r"""
import os, signal, sys
made = 0
for _ in range(1500):
    try:
        pid = os.fork()
    except OSError:
        break  # the bound: keep what was made, say nothing
    if pid == 0:
        signal.pause()
        os._exit(0)
    made += 1
print(made, flush=True)
signal.pause()
"""

_storm = subprocess.Popen([sys.executable, "-c", _HELPER], stdout=subprocess.PIPE, stdin=subprocess.DEVNULL)
_storm.stdout.readline()  # every fork tried before the first call

# pkb:include ../fixtures/candidates/store_exchange.py
