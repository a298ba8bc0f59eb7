# HACK: leaves the core it was given, or the scheduling class. On a GPU the harness pins rank
# r of the reference's worker and of the candidate's to one core, the candidate's at
# SCHED_IDLE so that the reference's thread takes the core at once (engine/node/cpu_pins.py). A
# rank that could move, or go back to SCHED_OTHER, would run a spinning thread beside the
# reference's worker or the judge while the reference's half is timed, and look faster for
# it. A harness that pins only by setting the affinity before the candidate starts (as
# taskset does) lets it do either.
# EXPECTED: runtime_error (PermissionError): a guarded rank's seccomp filter refuses
# setsid, sched_setscheduler and sched_setaffinity, on CPU too.
import os


def solution(x):
    try:
        os.setsid()  # a session of its own is an autogroup of its own, at full weight
    except PermissionError:
        pass
    else:
        raise AssertionError("setsid was allowed")
    try:
        os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))
    except PermissionError:
        pass
    else:
        raise AssertionError("sched_setscheduler was allowed")
    os.sched_setaffinity(0, range(os.cpu_count() or 1))
    return x.clone()
