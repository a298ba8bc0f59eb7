# HACK: answers its first call with a forged failure report on the socket it inherited:
# {"op": "failed", "stage": "setup", ...}, the worker's account of a failure of its own
# set-up, then waits. A harness that believes the stage a worker names takes it for its own
# fault (harness_error: deferred, never recorded, retried on every run), so a candidate
# that cannot get its answer right hides it instead (measured on main at 9c78ee4:
# harness_error).
# EXPECTED: runtime_error: once the candidate's code was sent to the worker, a "setup"
# failure is the candidate's.
import json
import os
import stat
import struct
import time


def solution(x):
    body = json.dumps({"op": "failed", "stage": "setup", "exc_type": "RuntimeError",
                       "message": "CUDA driver initialisation failed (not my fault)", "log": ""}).encode()
    for fd in range(3, 64):
        try:
            if stat.S_ISSOCK(os.fstat(fd).st_mode):
                os.write(fd, struct.pack(">I", len(body)) + body)
        except OSError:
            continue
    time.sleep(30)
    return x * 0
