# HACK: writes where the quota is not. Its /tmp and /dev/shm are sized tmpfs (launch/mounts.py),
# but bubblewrap's own / and /dev are tmpfs of half the node's memory, writable by the
# sandbox's user, and a new user namespace (by unshare, or by clone: a filter that refuses
# unshare alone, this harness before 2026-11-26, lets clone through, and clone3 hides its
# flags from any filter) lets it mount a tmpfs of any size. tmpfs pages
# are in no process's memory, so the OOM killer would take a judge, not the candidate. A
# harness that sizes /tmp only (this one before an adversarial review) lets all three
# through.
# EXPECTED: runtime_error naming every refusal: / and /dev read-only (EROFS), unshare
# refused by the filter (EACCES or EPERM), clone into a new user namespace refused (EACCES),
# clone3 unavailable (ENOSYS).
import ctypes
import errno
import os

CLONE_NEWNS, CLONE_NEWUSER = 0x00020000, 0x10000000
SIGCHLD = 17
SYS_CLONE, SYS_CLONE3 = 56, 435  # x86_64


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
    # clone(flags, stack=0, ...): the child runs on a copy of this stack, like fork; it
    # would mount its tmpfs, then leave.
    pid = libc.syscall(SYS_CLONE, CLONE_NEWUSER | CLONE_NEWNS | SIGCHLD, 0, 0, 0, 0)
    if pid == 0:
        libc._exit(0)
    refused.append(f"clone: {errno.errorcode.get(ctypes.get_errno(), '?')}" if pid < 0 else "clone was allowed")
    if pid > 0:
        os.waitpid(pid, 0)
    args = (ctypes.c_uint64 * 8)(CLONE_NEWUSER | CLONE_NEWNS, 0, 0, 0, SIGCHLD, 0, 0, 0)
    pid = libc.syscall(SYS_CLONE3, ctypes.byref(args), ctypes.sizeof(args))
    if pid == 0:
        libc._exit(0)
    refused.append(f"clone3: {errno.errorcode.get(ctypes.get_errno(), '?')}" if pid < 0 else "clone3 was allowed")
    if pid > 0:
        os.waitpid(pid, 0)
    raise RuntimeError("refused: " + "; ".join(refused))
