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
import threading
import time


def _push(fd, frame):
    view = memoryview(frame)
    try:
        while view:
            view = view[os.write(fd, view):]
    except OSError:
        pass


def solution(x):
    body = json.dumps({"op": "failed", "stage": "setup", "exc_type": "RuntimeError",
                       "message": "CUDA driver initialisation failed (not my fault)", "log": ""}).encode()
    frame = struct.pack(">I", len(body)) + body
    for fd in range(3, 64):
        try:
            if stat.S_ISSOCK(os.fstat(fd).st_mode):
                # One thread per socket: a socket whose peer does not read (the store's) would
                # block a plain loop before it reached the judge's channel (CI saw that).
                threading.Thread(target=_push, args=(fd, frame), daemon=True).start()
        except OSError:
            continue
    time.sleep(30)
    return x * 0
