import torch


def expected(inputs, world_size):
    """inputs[r] = (pos_scores, neg_scores) of rank r: each positive's rank among its own
    negatives (1 + how many score strictly higher), every rank's rows in rank order, on every
    rank. One comparison per (row, negative) as tensors: a Python loop over 2 x 16384 x 1024
    scores takes longer than the audit gives truth.py on GPU."""
    ranks = [1 + (neg > pos.reshape(-1, 1)).sum(dim=1) for pos, neg in inputs]
    out = torch.cat(ranks).to(torch.int64)
    return [out.clone() for _ in range(world_size)]
