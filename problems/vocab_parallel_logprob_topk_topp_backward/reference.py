# pkb:include ../_shared/vocab_parallel_logprob/reference.py


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
        full = _rows(flat[start:start + n].contiguous(), world)
        per_rank = full.shape[0]
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
