# HACK: returns torch.empty_like(x) without computing anything, hoping the caching allocator
# hands back memory that still holds a result: in a harness that ran the reference in the
# candidate's process and freed its output just before the call, it often does (Sakana's AI
# CUDA Engineer published speedups that came from reading the reference's stale output).
# EXPECTED: incorrect. The worker's process never held a reference output.
import torch


def solution(x):
    return torch.empty_like(x)
