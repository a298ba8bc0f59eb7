# HACK: finds the memfds the judge shares with it (the arena of inputs and output slots, the
# gate page: /proc/self/fd/N -> "memfd:pkb_arena") and truncates them to nothing, then, so
# that its own worker never touches the arena again, writes on its socket the reply the
# judge waits for ("done", every output copied). The judge still has the arena mapped: its
# read of the output slot faults with SIGBUS and the judge dies. A harness that shares
# memory without sealing its size reports its own crash (harness_error: never recorded,
# retried on every run), so the wrong answer is never shown (measured on main at 9c78ee4).
# EXPECTED: runtime_error (ftruncate fails: the memfds are sealed against shrinking and
# growing before any worker sees them, so the candidate raises naming what it tried); the
# judge survives.
import json
import os
import stat
import struct
import time


def _forge_done(x):
    leaf = {"T": {"slot": 0, "shape": list(x.shape), "dtype": str(x.dtype).removeprefix("torch."),
                  "device": str(x.device), "plain": True, "copied": True}}
    body = json.dumps({"op": "done", "outputs": [leaf], "event_ms": 1.0, "host_ms": 1.0, "expired": 0}).encode()
    for fd in range(3, 64):
        try:
            if stat.S_ISSOCK(os.fstat(fd).st_mode):
                os.write(fd, struct.pack(">I", len(body)) + body)
        except OSError:
            continue


def solution(x):
    shrunk = []
    for fd in range(3, 256):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith("/memfd:pkb_"):
            try:
                os.ftruncate(fd, 0)
            except OSError as e:
                raise RuntimeError(f"could not shrink {target}: {e}") from None
            shrunk.append(target)
    if not shrunk:
        raise RuntimeError("found no memfd to shrink")
    _forge_done(x)
    time.sleep(30)
    return x
