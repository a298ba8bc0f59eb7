# HACK: writes until the disk is full. Its /tmp is the only place it may write, a directory
# on the host: a harness without a quota there lets one candidate fill the node's disk, and
# /dev/shm (a tmpfs of half the node's memory) its memory, failing every evaluation after it,
# other sweeps' included, until someone cleans up. It fills /dev/shm first (removing what it
# wrote there, so that a harness that shares the host's /dev/shm is not left without
# memory by this test), then /tmp, 3 GiB a rank at most.
# EXPECTED: runtime_error, "No space left on device" from /tmp (the sandbox's tmpfs quota),
# the judge unharmed, and nothing of it left on the host (tests/engine/test_adversarial_cpu.py).
import errno
import os
import sys

import torch.distributed as dist

CHUNK = b"\xa5" * (8 << 20)


def _fill(directory):
    path = os.path.join(directory, f"pkb_fill_marker_rank{dist.get_rank()}")
    with open(path, "wb") as f:
        for _ in range((3 << 30) // len(CHUNK)):
            f.write(CHUNK)
            f.flush()
    return path


def solution(x):
    shm = os.path.join("/dev/shm", f"pkb_fill_marker_rank{dist.get_rank()}")
    try:
        _fill("/dev/shm")
        print("fills_disk: /dev/shm took 3 GiB", file=sys.stderr)
    except OSError as e:
        print(f"fills_disk: /dev/shm refused: {errno.errorcode.get(e.errno, e.errno)}", file=sys.stderr)
    finally:
        if os.path.exists(shm):
            os.unlink(shm)
    _fill(os.environ.get("TMPDIR", "/tmp"))
    return x.clone()
