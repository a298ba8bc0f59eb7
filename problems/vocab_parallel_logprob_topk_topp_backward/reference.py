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
def solution(logits: torch.Tensor, target: torch.Tensor, grad_output: torch.Tensor, top_k: int,
             top_p: float, chunk_size: int) -> torch.Tensor:
    world, rank = dist.get_world_size(), dist.get_rank()
    batch, seq, local_vocab = logits.shape
    tokens = batch * seq
    flat = logits.reshape(tokens, local_vocab)
    targets = target.reshape(tokens)
    grads = grad_output.reshape(tokens)
    step = batch * chunk_size
    out = []
    for start in range(0, tokens, step):
        n = min(step, tokens - start)
        per_rank = n // world
        recv = torch.empty(world, per_rank, local_vocab, dtype=logits.dtype, device=logits.device)
        dist.all_to_all_single(recv, flat[start:start + n].contiguous())
        full = recv.transpose(0, 1).reshape(per_rank, world * local_vocab).float()
        keep = _keep_mask(full, top_k, top_p)
        probs = full.masked_fill(~keep, float("-inf")).softmax(dim=-1)
        # d logp(target) / d logits = onehot(target) - p over the kept entries, 0 elsewhere
        lo = start + rank * per_rank
        grad = -probs
        grad[torch.arange(per_rank, device=grad.device), targets[lo:lo + per_rank]] += 1.0
        grad = grad * grads[lo:lo + per_rank].float().unsqueeze(1) * keep
        # token-parallel -> vocab-parallel: every rank gets its vocabulary slice of every token
        send = grad.reshape(per_rank, world, local_vocab).transpose(0, 1).contiguous()
        back = torch.empty_like(send)
        dist.all_to_all_single(back, send)
        out.append(back.reshape(n, local_vocab))
    return torch.cat(out).reshape(batch, seq, local_vocab)
