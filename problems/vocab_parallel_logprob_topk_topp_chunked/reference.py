# pkb:include ../_shared/vocab_parallel_logprob/reference.py


@torch.no_grad()
def solution(logits: torch.Tensor, target: torch.Tensor, top_k: int, top_p: float,
             chunk_size: int) -> torch.Tensor:
    batch, seq, local_vocab = logits.shape
    tokens = batch * seq
    flat = logits.reshape(tokens, local_vocab)
    targets = target.reshape(tokens)
    # bound the full-vocabulary working set: batch*chunk_size tokens at a time
    step = batch * chunk_size
    pieces = []
    for start in range(0, tokens, step):
        n = min(step, tokens - start)
        pieces.append(_logprobs(flat[start:start + n].contiguous(), targets[start:start + n], top_k, top_p))
    return torch.cat(pieces).reshape(batch, seq)
