# The inputs of the moe_ep_forward_* problems. The including file defines
# `_num_experts(world_size)`, the one thing its variant changes: how many experts there are.
import math

import torch

_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}
ROUTER_MARGIN = 0.02  # least gap between the k-th and (k+1)-th router logit of any token


def _router(seed, size, num_experts, dt, device):
    g = torch.Generator(device=device).manual_seed(seed * 1_000_003 + 999_983)  # replicated
    h = size["hidden"]
    weight = (1.5 / math.sqrt(h)) * torch.randn(num_experts, h, generator=g, device=device)
    bias = 0.5 * torch.randn(num_experts, generator=g, device=device)  # uneven expert popularity
    return weight.to(dt), bias.to(dt)


def _expert(seed, size, e, dt, device):
    """Weights of global expert e: the same on every rank that holds it."""
    g = torch.Generator(device=device).manual_seed(seed * 1_000_003 + 500_009 + 7919 * e)
    h, i = size["hidden"], size["inter"]
    w_gate = torch.randn(i, h, generator=g, device=device) / math.sqrt(h)
    w_up = torch.randn(i, h, generator=g, device=device) / math.sqrt(h)
    w_down = torch.randn(h, i, generator=g, device=device) / math.sqrt(i)
    return w_gate.to(dt), w_up.to(dt), w_down.to(dt)


def _tokens(rank, seed, size, weight, bias, top_k, dt, device):
    """Tokens whose top-k experts are clear: no near-tie at the k-th logit, so every exact
    method (fp32 or fp64 router, any summation order) picks the same experts."""
    g = torch.Generator(device=device).manual_seed(seed * 1_000_003 + rank)
    x = torch.randn(size["tokens"], size["hidden"], generator=g, device=device).to(dt)
    if top_k >= weight.shape[0]:
        return x
    for _ in range(100):
        logits = x.double() @ weight.double().T + bias.double()
        top = torch.topk(logits, top_k + 1, dim=-1).values
        bad = (top[:, top_k - 1] - top[:, top_k]) < ROUTER_MARGIN
        if not bool(bad.any()):
            return x
        x[bad] = torch.randn(int(bad.sum()), x.shape[1], generator=g, device=device).to(dt)
    raise RuntimeError("could not draw tokens with a clear top-k")


def make_inputs(rank, world_size, seed, size, device="cpu"):
    dt = getattr(torch, size["dtype"])
    num_experts = _num_experts(world_size)
    top_k = min(size["top_k"], num_experts)
    ep_size = min(world_size, num_experts)
    local = num_experts // ep_size
    weight, bias = _router(seed, size, num_experts, dt, device)
    x = _tokens(rank, seed, size, weight, bias, top_k, dt, device)
    first = (rank % ep_size) * local
    experts = [_expert(seed, size, first + e, dt, device) for e in range(local)]
    w_gate, w_up, w_down = (torch.stack(ws) for ws in zip(*experts))
    return x, weight, bias, w_gate, w_up, w_down, num_experts, top_k


def roofline(world_size, size):
    t, h, i, k = size["tokens"], size["hidden"], size["inter"], size["top_k"]
    e = _BYTES[size["dtype"]]
    num_experts = _num_experts(world_size)
    k = min(k, num_experts)
    local = num_experts // min(world_size, num_experts)
    # For each expert held elsewhere, either its weights come here (3 h i values) or this rank's
    # tokens for it go there and their results come back (2 rows each, t k / E rows on average).
    # A rank may pick the cheaper per expert. Skewed routing can leave an expert a quarter of
    # the average tokens, so only the token path is discounted: the weights' size is fixed, and
    # with k = E every token visits every expert.
    weights = 3 * h * i * e
    tokens = 2 * (t * k / num_experts) * h * e * (1.0 if k >= num_experts else 0.25)
    return {
        "nvlink_bytes_per_rank": (num_experts - local) * min(weights, tokens),
        "flops_per_rank": 6.0 * t * k * h * i + 2.0 * t * h * num_experts,
        # read the tokens and the local experts' weights, write the output
        "hbm_bytes_per_rank": 2.0 * t * h * e + 3.0 * local * h * i * e,
    }
