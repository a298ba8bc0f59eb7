# HACK: writes where the quota is not. Its /tmp and /dev/shm are sized tmpfs (sandbox.py),
# but bubblewrap's own / and /dev are tmpfs of half the node's memory, writable by the
# sandbox's user, and a new user namespace lets it mount a tmpfs of any size. tmpfs pages
# are in no process's memory, so the OOM killer would take a judge, not the candidate. A
# harness that sizes /tmp only (this one before an adversarial review) lets all three
# through.
# EXPECTED: runtime_error naming every refusal: / and /dev read-only (EROFS), unshare
# refused by the filter (EACCES or EPERM).
import ctypes
import errno
import os

CLONE_NEWNS, CLONE_NEWUSER = 0x00020000, 0x10000000


def solution(x):
    refused = []
    for path in ("/pkb_escape_marker", "/dev/pkb_escape_marker"):
        try:
            with open(path, "wb") as f:
                f.write(b"x" * (1 << 20))
            os.unlink(path)
        except OSError as e:
            refused.append(f"{path}: {errno.errorcode.get(e.errno, e.errno)}")
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0:
        refused.append(f"unshare: {errno.errorcode.get(ctypes.get_errno(), '?')}")
    raise RuntimeError("refused: " + "; ".join(refused))
