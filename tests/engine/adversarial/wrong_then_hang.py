# HACK: none; two bugs at once. Rank 0 returns a wrong output at once; rank 1 never returns.
# The old engine killed the group when it saw the hang and reported "runtime_error: rank 1
# killed by signal SIGKILL", naming a rank the harness had killed itself as the cause.
# EXPECTED: incorrect on rank 0 (its verdict came first); rank 1 is not blamed.
import time

import torch
import torch.distributed as dist


def solution(x):
    if dist.get_rank() == 1:
        while True:
            time.sleep(1)
    return torch.zeros_like(x)
