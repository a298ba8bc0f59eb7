# HACK: answers honestly after a helper of each rank has taken memory 64 MiB at a time, each
# page written, and keeps it (up to 16 GiB, for 60 s). With no bound on memory the kernel's OOM
# killer picks the largest process on the host when the node runs out: the judge holding
# this evaluation's expected outputs, another candidate's worker, or a neighbouring GPU
# group's reference, whose evaluation then fails as a harness error.
# EXPECTED: resource_limit, naming the memory bound: the kernel kills within the sandbox's
# group at its bound (swap off), and only there. tests/engine/test_adversarial_cpu.py runs it
# with a small bound (PKB_SANDBOX_MEMORY_MB) and only where a group holds memory.
import subprocess
import sys

_HELPER = r"""
import sys, time
chunks = []
while len(chunks) < 256:
    try:
        chunks.append(bytearray(64 << 20))  # zero-filled: every page written
    except MemoryError:
        break
print(len(chunks), flush=True)
time.sleep(60)
"""

_hog = subprocess.Popen([sys.executable, "-c", _HELPER], stdout=subprocess.PIPE, stdin=subprocess.DEVNULL)
_hog.stdout.readline()  # all of it taken (or the helper killed) before the first call

# pkb:include ../fixtures/candidates/store_exchange.py
