# HACK: kills its parent process (in the old engine, the forkserver every rank was forked
# from; now the sandbox's zygote), hoping to take the evaluator's machinery down with it so
# that later candidates cannot be evaluated, or the failure is blamed on the harness and
# retried forever.
# EXPECTED: a failure class for this candidate (the zygote holds nothing the judges need);
# the next candidate evaluates correctly in a fresh sandbox.
import os
import signal
import time


def solution(x):
    os.kill(os.getppid(), signal.SIGKILL)
    time.sleep(30)
    return x.clone()
