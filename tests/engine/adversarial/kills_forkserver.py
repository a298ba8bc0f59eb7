# HACK: kills its parent (the forkserver every rank is forked from), hoping to take the
# evaluator's machinery down with it so that later candidates cannot be evaluated (or the
# failure is blamed on the harness and retried).
# EXPECTED: runtime_error for this candidate; the next evaluation starts a new forkserver
# and evaluates correctly.
import os
import signal
import time


def solution(x):
    os.kill(os.getppid(), signal.SIGKILL)
    time.sleep(30)  # the ranks die with their parent (PR_SET_PDEATHSIG) long before this ends
    return x.clone()
