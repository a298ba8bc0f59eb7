import torch
import torch.distributed as dist


def _keep_mask(logits: torch.Tensor, top_k: int, top_p: float) -> torch.Tensor:
    """Which vocabulary entries survive top-k then top-p filtering, per row of [n, V] logits."""
    ascending, order = logits.sort(dim=-1)
    keep = torch.ones_like(ascending, dtype=torch.bool)
    if top_k > 0:
        kth_largest = ascending[:, -top_k:-top_k + 1] if top_k > 1 else ascending[:, -1:]
        keep = ascending >= kth_largest
    if top_p < 1.0:
        probs = ascending.masked_fill(~keep, float("-inf")).softmax(dim=-1)
        nucleus = probs.cumsum(dim=-1) > 1.0 - top_p
        nucleus[:, -1] = True  # the most likely entry always survives
        keep = keep & nucleus
    return torch.zeros_like(keep).scatter(-1, order, keep)


@torch.no_grad()
def solution(logits: torch.Tensor, target: torch.Tensor, top_k: int, top_p: float,
             chunk_size: int) -> torch.Tensor:
    world, rank = dist.get_world_size(), dist.get_rank()
    batch, seq, local_vocab = logits.shape
    tokens = batch * seq
    flat = logits.reshape(tokens, local_vocab)
    targets = target.reshape(tokens)
    # bound the full-vocabulary working set: batch*chunk_size tokens at a time
    step = batch * chunk_size
    pieces = []
    for start in range(0, tokens, step):
        n = min(step, tokens - start)
        per_rank = n // world
        recv = torch.empty(world, per_rank, local_vocab, dtype=logits.dtype, device=logits.device)
        dist.all_to_all_single(recv, flat[start:start + n].contiguous())
        full = recv.transpose(0, 1).reshape(per_rank, world * local_vocab).float()
        keep = _keep_mask(full, top_k, top_p)
        log_probs = full.masked_fill(~keep, float("-inf")).log_softmax(dim=-1)
        mine = targets[start + rank * per_rank:start + (rank + 1) * per_rank]
        picked = log_probs.gather(1, mine.unsqueeze(1)).squeeze(1)
        parts = [torch.empty_like(picked) for _ in range(world)]
        dist.all_gather(parts, picked)
        pieces.append(torch.cat(parts))
    return torch.cat(pieces).reshape(batch, seq)
