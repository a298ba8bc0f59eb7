# HACK: writes, on the socket it inherited, a reply frame nested a million levels deep
# ({"op": "done", "outputs": [[[[...]]]]}: 2 MB, under the reply size limit), then waits.
# A harness that bounds a frame's size but parses it with json.loads meets RecursionError
# in its own parser; taken for the harness's own fault (harness_error), the cell is never
# recorded and retried on every run, so the wrong answer below is never shown and pass@k
# over recorded cells counts the survivors only (measured on main at 9c78ee4: 2 of 2).
# EXPECTED: runtime_error naming the depth limit: the judge measures a frame's nesting
# before it parses it, and a malformed frame is the candidate's failure.
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
    depth = 1_000_000
    body = b'{"op":"done","outputs":' + b"[" * depth + b"]" * depth + b',"event_ms":1,"host_ms":1,"expired":0}'
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
