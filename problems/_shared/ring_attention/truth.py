# The shared part of the ground truth of ring_attention_pp and ring_attention_tp: attention
# over the whole sequence in fp64. Each including file defines its own `expected`.
import torch


def _attention(q, k, v, scale, causal):  # [B, S, H, d] -> [B, S, H, d], fp64
    scores = torch.einsum("bqhd,bkhd->bhqk", q, k) * scale
    if causal:
        n = q.shape[1]
        scores = scores.masked_fill(torch.ones(n, n, dtype=torch.bool).triu(1), float("-inf"))
    return torch.einsum("bhqk,bkhd->bqhd", torch.softmax(scores, dim=-1), v)
