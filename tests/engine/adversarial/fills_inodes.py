# HACK: makes empty files until the file system refuses, in /dev/shm and then /tmp. No byte
# quota sees them: tmpfs bounds bytes by `size=` and files only by `nr_inodes=`, whose default
# is half the machine's pages, so a harness with a byte quota alone lets one candidate pin
# millions of inodes (about a kilobyte of kernel memory each) until its sandbox is removed.
# EXPECTED: runtime_error, "No space left on device" from /dev/shm and from /tmp, each within
# TMP_QUOTA_FILES files (engine/launch/mounts.py), and nothing of it left on the host.
import errno
import os

import torch.distributed as dist

LIMIT = 200_000
"""Past the quota's 65536 files, far below the default inode limit of any machine."""


def _fill(directory):
    base = os.path.join(directory, f"pkb_inode_marker_rank{dist.get_rank()}")
    os.mkdir(base)
    for i in range(LIMIT):
        try:
            os.close(os.open(os.path.join(base, str(i)), os.O_CREAT | os.O_WRONLY, 0o600))
        except OSError as e:
            return f"{directory} refused file {i}: {errno.errorcode.get(e.errno, e.errno)}"
    return f"{directory} took {LIMIT} files"


def solution(x):
    said = [_fill("/dev/shm"), _fill(os.environ.get("TMPDIR", "/tmp"))]
    raise RuntimeError("; ".join(said))
