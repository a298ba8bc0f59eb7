# The inputs of the vocab_parallel_logprob_topk_topp* problems. The including file sets
# CHUNKED (chunk_size follows top_p) and BACKWARD (grad_output follows target, and the
# output is the gradient of the vocabulary-sharded logits).
import torch

_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}
# the top-p boundary must sit this far (in probability mass) from every cumulative sum, so
# that fp32 summation order cannot move a token across it
_MARGIN = 2e-3


def _global_logits(world_size, seed, size, device):
    """All ranks' logits [tokens, vocab] (the same on every rank: each keeps its own slice) and
    the targets, sampled from the top-k/top-p filtered distribution as an RL rollout would."""
    tokens, vocab, k, p = size["batch"] * size["seq"], size["vocab"], size["top_k"], size["top_p"]
    g = torch.Generator(device=device).manual_seed(seed * 1_000_003 + 999_983)
    # per-token logit scale 1..3: flat and peaked distributions, so top-p cuts at varying ranks
    scale = 1.0 + 2.0 * torch.rand(tokens, 1, generator=g, device=device)
    logits = torch.randn(tokens, vocab, generator=g, device=device) * scale
    rows = torch.arange(tokens, device=device)
    for _ in range(50):
        vals, idx = logits.topk(k + 1, dim=1)
        # exact ties among the top k+1 would make the filtered set depend on sort order
        tied = vals[:, :-1] == vals[:, 1:]
        if tied.any():
            t, j = tied.nonzero(as_tuple=True)
            logits[t, idx[t, j + 1]] = torch.nextafter(vals[t, j + 1], torch.tensor(float("-inf"), device=device))
            continue
        probs = vals[:, :k].double().softmax(dim=1).flip(1)  # ascending, as the filter sums them
        near = ((probs.cumsum(1) - (1.0 - p)).abs() < _MARGIN).any(dim=1)
        if not near.any():
            break
        logits[near] *= 1.0137  # sharpen those tokens a little and look again
    else:
        raise RuntimeError("could not separate the top-p boundary from the cumulative sums")
    kept_desc = (probs.cumsum(1) > 1.0 - p).flip(1)  # over vals[:, :k], descending
    kept_desc[:, 0] = True
    choice = torch.rand(tokens, generator=g, device=device) * kept_desc.sum(1)
    target = idx[rows, choice.long().clamp_max(k - 1)]
    return logits, target.reshape(size["batch"], size["seq"])


def make_inputs(rank, world_size, seed, size, device="cpu"):
    logits, target = _global_logits(world_size, seed, size, device)
    local = size["vocab"] // world_size
    shard = logits[:, rank * local:(rank + 1) * local].reshape(size["batch"], size["seq"], local)
    dt = getattr(torch, size["dtype"])
    args = [shard.contiguous().to(dt), target]
    if BACKWARD:
        # upstream gradient of the per-token log-probs (e.g. advantage-weighted policy loss)
        gg = torch.Generator(device=device).manual_seed(seed * 1_000_003 + 424_242)
        grad_output = torch.randn(size["batch"], size["seq"], generator=gg, device=device)
        args.append(grad_output.to(dt))
    args += [int(size["top_k"]), float(size["top_p"])]
    if CHUNKED:
        args.append(int(size["chunk_size"]))
    return tuple(args)


def roofline(world_size, size):
    e = _BYTES[size["dtype"]]
    tokens, vocab, w = size["batch"] * size["seq"], size["vocab"], world_size
    local = vocab // w
    return {
        # a rank needs, for its tokens, the other ranks' vocabulary slices (or at least their
        # top-k candidates plus a log-sum-exp term: k values and indices per token and rank)
        "nvlink_bytes_per_rank": min(tokens / w * (w - 1) * local * e,
                                     tokens * (w - 1) * (size["top_k"] * 8 + 4.0)),
        # one pass over the local logits (compare/select), exp for the kept entries only
        "flops_per_rank": float(tokens * local),
        # read the local logits once (and, backward, write the local gradient once)
        "hbm_bytes_per_rank": (2.0 if BACKWARD else 1.0) * tokens * local * e,
    }
