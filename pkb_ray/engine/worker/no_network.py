"""No network for candidate code: a seccomp filter, installed in each guarded rank before
the candidate is imported, makes socket(AF_INET / AF_INET6) and io_uring fail with EACCES.

Why: the ranks of a candidate may exchange data only through what the harness sets up
(symmetric memory; on CPU its stand-in, the group's store). Gloo, NCCL and MPI all meet
their peers over TCP; so does any socket a candidate opens itself. Measured on main at
9c78ee4: restoring the guard's originals and calling new_group(backend="gloo") on the
worker's store ran real collectives, scored correct. A Python guard can be unwrapped; a
seccomp filter cannot be removed by the process it filters, nor by its children, and it
holds in every sandbox kind (bwrap's network namespace has a loopback, uid and none modes
have the host's network).

The same filter refuses sched_setaffinity, sched_setscheduler, sched_setattr and setsid
(engine/node/cpu_pins.py says why), ptrace and process_vm_readv/writev, unshare, mount and clone
into a new namespace (clone3 answers ENOSYS), and sending SIGCONT (engine/judge/freezer.py),
whether by kill, by a child's exit or a parent's death signal, by I/O (F_SETSIG) or, on cpu,
by a timer.

What stays allowed: Unix sockets (the judge's channel; symmetric memory passes its CUDA
handles over AF_UNIX), files, and everything else. io_uring is refused because it can
open sockets without the socket() system call.

libseccomp (libseccomp.so.2, installed with systemd on every Debian/Ubuntu image) writes the
BPF program, through ctypes: its Python binding is not packaged for pip. It also refuses
system calls of a foreign ABI (x32, int 0x80), which a hand-written filter would have to.
"""

from __future__ import annotations

import ctypes
import errno
import signal
import socket

_ACT_ALLOW = 0x7FFF0000
_ACT_ERRNO = 0x00050000
_CMP_MASKED_EQ = 7
_FLTATR_CTL_TSYNC = 4
REFUSED_FAMILIES = (socket.AF_INET, socket.AF_INET6)
REFUSED_CALLS = ("io_uring_setup", "io_uring_enter", "io_uring_register",
                 # Not network, but the same filter: a guarded rank stays on the core it was
                 # pinned to, yielding it (engine/node/cpu_pins.py), so that a spinning thread of
                 # its own cannot slow the judge or the reference's half; setsid would make
                 # it a scheduling group (autogroup) of full weight.
                 "sched_setaffinity", "sched_setscheduler", "sched_setattr", "setsid",
                 # Nor reach another process's memory (its zygote runs unfiltered).
                 "ptrace", "process_vm_readv", "process_vm_writev",
                 # Nor make a user namespace to mount a tmpfs of its own past the quota
                 # (launch/mounts.py): unshare here, clone below.
                 "unshare", "mount")
NAMESPACE_FLAGS = (0x00000080, 0x00020000, 0x02000000, 0x04000000, 0x08000000, 0x10000000, 0x20000000,
                   0x40000000)
"""CLONE_NEWTIME, NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET: clone() with any
of them is refused (its flags are its first argument)."""
NO_CLONE3 = "clone3"
"""clone3's flags sit in a struct a filter cannot read: it fails with ENOSYS, and glibc falls
back to clone() (threads and fork both), whose flags it can (Docker's default profile does
the same)."""
SIGNALS = (("kill", 1), ("tkill", 1), ("tgkill", 2), ("rt_sigqueueinfo", 1), ("rt_tgsigqueueinfo", 2),
           ("pidfd_send_signal", 1))
"""(call, index of its signal argument): none may send SIGCONT. On cpu the judges stop a
rank's processes while the reference's half runs (engine/judge/freezer.py); a process of
another rank, or one the judge has not stopped yet, would resume them."""


CPU_ONLY_CALLS = ("timer_create",)
"""Refused where the judges stop ranks (cpu): a POSIX timer's signal is named in a struct
(sigevent) a filter cannot read, and a timer whose signal is SIGCONT resumes a stopped process
from the kernel, past the rule on kill (attack spins_unseen.py). Python, torch and gloo make
no such timer (the CPU suite passes without it); on GPUs nothing is stopped, and the driver is
not refused what it might use."""
F_SETSIG = 10
"""fcntl(fd, F_SETSIG, SIGCONT) would make I/O readiness on fd send SIGCONT: refused whatever
the signal (nothing of ours sets one)."""
PR_SET_PDEATHSIG = 1
"""prctl(PR_SET_PDEATHSIG, SIGCONT): a parent's death would resume its child. Refused for
SIGCONT only (the harness's processes set SIGKILL, before any filter)."""


class NoNetworkUnavailable(RuntimeError):
    """The filter cannot be installed here (no libseccomp, or the kernel refused it)."""


class _ArgCmp(ctypes.Structure):
    _fields_ = [("arg", ctypes.c_uint), ("op", ctypes.c_int), ("datum_a", ctypes.c_uint64),
                ("datum_b", ctypes.c_uint64)]


def _int_is(arg: int, value: int) -> _ArgCmp:
    """Argument `arg`, a C int, equals `value`. The kernel reads only the low 32 bits of an
    int argument, and a filter compares all 64: with a plain equality socket(0x1_00000002,
    ...) opens an AF_INET socket and kill(pid, 0x1_00000012) sends SIGCONT past it (attack
    opens_socket_high_bits.py)."""
    return _ArgCmp(arg, _CMP_MASKED_EQ, 0xFFFFFFFF, value)


def install(cpu: bool = False) -> None:
    """Filter this process and all its threads (TSYNC), irrevocably; `cpu`: its ranks are
    stopped between halves (CPU_ONLY_CALLS). Raises NoNetworkUnavailable naming what is
    missing."""
    try:
        lib = ctypes.CDLL("libseccomp.so.2", use_errno=True)
    except OSError as e:
        raise NoNetworkUnavailable(f"libseccomp.so.2 is not installed ({e}): install libseccomp2") from e
    lib.seccomp_init.restype = ctypes.c_void_p
    lib.seccomp_init.argtypes = [ctypes.c_uint32]
    lib.seccomp_rule_add.argtypes = [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_int, ctypes.c_uint]
    lib.seccomp_syscall_resolve_name.argtypes = [ctypes.c_char_p]
    lib.seccomp_attr_set.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32]
    lib.seccomp_load.argtypes = [ctypes.c_void_p]
    lib.seccomp_release.argtypes = [ctypes.c_void_p]
    ctx = lib.seccomp_init(_ACT_ALLOW)
    if not ctx:
        raise NoNetworkUnavailable("seccomp_init failed")
    deny = _ACT_ERRNO | errno.EACCES
    try:
        nr = lib.seccomp_syscall_resolve_name(b"socket")
        for family in REFUSED_FAMILIES:
            rc = lib.seccomp_rule_add(ctx, deny, nr, 1, _int_is(0, family))
            if rc != 0:
                raise NoNetworkUnavailable(f"seccomp_rule_add(socket, {family}) failed ({rc})")
        for call in REFUSED_CALLS + (CPU_ONLY_CALLS if cpu else ()):
            nr = lib.seccomp_syscall_resolve_name(call.encode())
            if nr >= 0 and lib.seccomp_rule_add(ctx, deny, nr, 0) != 0:
                raise NoNetworkUnavailable(f"seccomp_rule_add({call}) failed")
        nr = lib.seccomp_syscall_resolve_name(b"clone")
        for flag in NAMESPACE_FLAGS:
            if lib.seccomp_rule_add(ctx, deny, nr, 1, _ArgCmp(0, _CMP_MASKED_EQ, flag, flag)) != 0:
                raise NoNetworkUnavailable(f"seccomp_rule_add(clone, {flag:#x}) failed")
        # A child whose exit signal (clone's low byte of flags) is SIGCONT resumes its
        # parent when it exits: kill's rule does not see that signal.
        if lib.seccomp_rule_add(ctx, deny, nr, 1, _ArgCmp(0, _CMP_MASKED_EQ, 0xFF, signal.SIGCONT)) != 0:
            raise NoNetworkUnavailable("seccomp_rule_add(clone, exit signal SIGCONT) failed")
        nr = lib.seccomp_syscall_resolve_name(b"prctl")  # a parent's death signal: SIGCONT
        if lib.seccomp_rule_add(ctx, deny, nr, 2, _int_is(0, PR_SET_PDEATHSIG), _int_is(1, signal.SIGCONT)) != 0:
            raise NoNetworkUnavailable("seccomp_rule_add(prctl, PR_SET_PDEATHSIG SIGCONT) failed")
        nr = lib.seccomp_syscall_resolve_name(b"fcntl")
        if lib.seccomp_rule_add(ctx, deny, nr, 1, _int_is(1, F_SETSIG)) != 0:
            raise NoNetworkUnavailable("seccomp_rule_add(fcntl, F_SETSIG) failed")
        nr = lib.seccomp_syscall_resolve_name(NO_CLONE3.encode())
        if nr >= 0 and lib.seccomp_rule_add(ctx, _ACT_ERRNO | errno.ENOSYS, nr, 0) != 0:
            raise NoNetworkUnavailable("seccomp_rule_add(clone3) failed")
        for call, arg in SIGNALS:
            nr = lib.seccomp_syscall_resolve_name(call.encode())
            if nr >= 0 and lib.seccomp_rule_add(ctx, deny, nr, 1, _int_is(arg, signal.SIGCONT)) != 0:
                raise NoNetworkUnavailable(f"seccomp_rule_add({call}, SIGCONT) failed")
        if lib.seccomp_attr_set(ctx, _FLTATR_CTL_TSYNC, 1) != 0:
            raise NoNetworkUnavailable("seccomp cannot filter every thread (TSYNC)")
        rc = lib.seccomp_load(ctx)  # sets no_new_privs itself
        if rc != 0:
            raise NoNetworkUnavailable(f"seccomp_load failed ({rc}: {errno.errorcode.get(-rc, '?')})")
    finally:
        lib.seccomp_release(ctx)
