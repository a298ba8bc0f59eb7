# HACK: os._exit(0) on rank 0 in the middle of a call: exit code 0 and no exception, so a
# harness that trusts exit codes (or waits for an exception) sees a clean run.
# EXPECTED: runtime_error ("exited with code 0 without reporting").
import os

import torch.distributed as dist


def solution(x):
    if dist.get_rank() == 0:
        os._exit(0)
    return x.clone()
