import torch
import torch.distributed as dist
import torch.nn.functional as F


def _global_sum(x: torch.Tensor) -> torch.Tensor:
    dist.all_reduce(x, op=dist.ReduceOp.SUM)
    return x


def solution(
    hidden_states: torch.Tensor,
    weight: torch.Tensor,
    labels: torch.Tensor,
    old_logprobs: torch.Tensor,
    advantages: torch.Tensor,
    ignore_index: int,
):
    logits = F.linear(hidden_states, weight).float()
    ce = F.cross_entropy(logits, labels, ignore_index=ignore_index, reduction="none")
    logp = -ce
    valid = labels != ignore_index
    n_valid = _global_sum(valid.sum().float()).clamp(min=1.0)

    delta = (logp - old_logprobs).masked_fill(~valid, 0.0).clamp(-20.0, 20.0)
    ratio = torch.exp(delta)
    pg = -(ratio * advantages).masked_fill(~valid, 0.0)
    loss = _global_sum(pg.sum()) / n_valid

    ratio_mean = _global_sum(ratio.masked_fill(~valid, 0.0).sum()) / n_valid
    ratio_min = ratio.masked_fill(~valid, float("inf")).min()
    dist.all_reduce(ratio_min, op=dist.ReduceOp.MIN)
    ratio_max = ratio.masked_fill(~valid, float("-inf")).max()
    dist.all_reduce(ratio_max, op=dist.ReduceOp.MAX)
    k3 = _global_sum((ratio - delta - 1.0).masked_fill(~valid, 0.0).sum()) / n_valid
    entropy = _global_sum(ce.masked_fill(~valid, 0.0).sum()) / n_valid
    metrics = torch.stack([ratio_mean, ratio_min, ratio_max, k3, entropy])
    return loss, None, logp, pg, metrics
