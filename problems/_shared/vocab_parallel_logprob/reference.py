# The shared part of the references of the vocab_parallel_logprob_topk_topp* problems: the
# top-k/top-p filter, the move from vocabulary-sharded logits to whole rows, and the filtered
# log-probabilities of one block of tokens. Each including file defines its own `solution`.
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


def _rows(chunk: torch.Tensor, world: int) -> torch.Tensor:
    """vocab-parallel -> token-parallel: of a [n, vocab/world] block of every rank's logits,
    rank j gets tokens j*n/world ... with the full vocabulary, as float [n/world, vocab]."""
    n, local_vocab = chunk.shape
    per_rank = n // world
    recv = torch.empty(world, per_rank, local_vocab, dtype=chunk.dtype, device=chunk.device)
    dist.all_to_all_single(recv, chunk)
    return recv.transpose(0, 1).reshape(per_rank, world * local_vocab).float()


def _logprobs(chunk: torch.Tensor, targets: torch.Tensor, top_k: int, top_p: float) -> torch.Tensor:
    """The filtered log-probability of each target of a block of tokens ([n, vocab/world]
    logits, [n] targets), all n of them on every rank."""
    world, rank = dist.get_world_size(), dist.get_rank()
    full = _rows(chunk, world)
    per_rank = full.shape[0]
    keep = _keep_mask(full, top_k, top_p)
    log_probs = full.masked_fill(~keep, float("-inf")).log_softmax(dim=-1)
    mine = targets[rank * per_rank:(rank + 1) * per_rank]
    picked = log_probs.gather(1, mine.unsqueeze(1)).squeeze(1)
    parts = [torch.empty_like(picked) for _ in range(world)]
    dist.all_gather(parts, picked)
    return torch.cat(parts)
