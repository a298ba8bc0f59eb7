import torch
import torch.distributed as dist
import torch.nn.functional as F


def solution(
    gate_logits: list[torch.Tensor],
    num_experts: int,
    top_k: int,
    attention_mask: torch.Tensor,
) -> torch.Tensor:
    logits = torch.cat(list(gate_logits), dim=0)  # [layers * rows, E]
    probs = F.softmax(logits, dim=-1)
    _, chosen = torch.topk(probs, top_k, dim=-1)
    expert_mask = F.one_hot(chosen, num_experts).float()  # [N, k, E]
    layers = logits.shape[0] // attention_mask.numel()
    row_mask = attention_mask.reshape(1, -1).expand(layers, -1).reshape(-1, 1).to(probs.dtype)
    valid = row_mask.sum()
    tokens_per_expert = (expert_mask * row_mask[:, :, None]).sum(0) / valid  # [k, E]
    router_prob = (probs * row_mask).sum(0) / valid  # [E]
    loss = (tokens_per_expert * router_prob[None, :]).sum() * num_experts
    dist.all_reduce(loss, op=dist.ReduceOp.SUM)
    return loss / dist.get_world_size()
