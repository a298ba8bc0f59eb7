# HACK: writes a verdict on its inherited channel: a frame shaped like the judge's own report
# to the node ("judge_report", correct, fast), then exits 0. A harness in which the process
# that ran the candidate also writes the result (or whose parent reads an exit code) records
# what the candidate wrote.
# EXPECTED: runtime_error (the judge expects a reply to its request and gets a message it is
# not waiting for: the worker broke the protocol). Only judges write results.
import json
import os
import stat
import struct


def solution(x):
    body = json.dumps({"op": "judge_report", "eval_id": "x", "rank": 0, "failure": "",
                       "message": "correct and 100x faster", "compiled": True}).encode()
    for fd in range(3, 64):
        try:
            if stat.S_ISSOCK(os.fstat(fd).st_mode):
                os.write(fd, struct.pack(">I", len(body)) + body)
        except OSError:
            continue
    os._exit(0)
