import math

import torch

_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}


def router_inputs(rank, seed, size, device):
    """Tokens and router on dyadic grids: hidden in k/16 (|k| <= 16), gate weights in k/64
    (|k| <= 4), bias in k/64 plus e * 2^-16. Every product is a multiple of 2^-10 and every
    logit fits in 24 bits, so float32 logits are exact in any order; the e * 2^-16 term
    (< 2^-10 apart) keeps two experts' logits from ever being equal."""
    dt = getattr(torch, size["dtype"])
    t, h, e = size["tokens"], size["hidden"], size["experts"]
    gw = torch.Generator(device=device).manual_seed(seed * 1_000_003 + 555_557)
    gate_weight = torch.randint(-4, 5, (e, h), generator=gw, device=device).float() / 64
    gate_bias = (torch.randint(-32, 33, (e,), generator=gw, device=device).float() / 64
                 + torch.arange(e, device=device).float() * 2.0 ** -16)
    g = torch.Generator(device=device).manual_seed(seed * 1_000_003 + rank)
    x = (torch.randint(-16, 17, (t, h), generator=g, device=device).float() / 16).to(dt)
    return x, gate_weight, gate_bias


def make_inputs(rank, world_size, seed, size, device="cpu"):
    dt = getattr(torch, size["dtype"])
    x, gate_weight, gate_bias = router_inputs(rank, seed, size, device)
    h, i, r = size["hidden"], size["inter"], size["lora_rank"]
    loc = size["experts"] // world_size
    g = torch.Generator(device=device).manual_seed(seed * 1_000_003 + 31 * rank + 17)

    # gate/up outputs ~N(0, 1) for hidden values of std 0.58; expert outputs ~N(0, 1)
    def rnd(*shape, scale):
        return (scale * torch.randn(*shape, generator=g, device=device)).to(dt)

    # LoRA B is random (not the zero init) so the adapters change the output; A x B adds
    # about half the base projection's magnitude
    return (x, gate_weight, gate_bias,
            rnd(loc, i, h, scale=1.7 / math.sqrt(h)), rnd(loc, i, scale=0.1),
            rnd(loc, i, h, scale=1.7 / math.sqrt(h)), rnd(loc, i, scale=0.1),
            rnd(loc, h, i, scale=1.6 / math.sqrt(i)), rnd(loc, h, scale=0.1),
            rnd(loc, r, h, scale=1 / math.sqrt(h)), rnd(loc, i, r, scale=0.5 / math.sqrt(r)),
            rnd(loc, r, h, scale=1 / math.sqrt(h)), rnd(loc, i, r, scale=0.5 / math.sqrt(r)),
            rnd(loc, r, i, scale=1 / math.sqrt(i)), rnd(loc, h, r, scale=0.5 / math.sqrt(r)),
            size["experts"], size["top_k"])


def _expected_dest_ranks(world_size, size):
    # expected distinct expert ranks per token for uniform routing: w * (1 - C(E-L, k) / C(E, k))
    e, k = size["experts"], size["top_k"]
    loc = e // world_size
    miss = math.comb(e - loc, k) / math.comb(e, k) if e - loc >= k else 0.0
    return world_size * (1.0 - miss)


def roofline(world_size, size):
    t, h, i, e, k, r = (size["tokens"], size["hidden"], size["inter"], size["experts"],
                        size["top_k"], size["lora_rank"])
    b = _BYTES[size["dtype"]]
    loc = e // world_size
    remote = _expected_dest_ranks(world_size, size) * (world_size - 1) / world_size
    per_row = 3 * h * i + 2 * r * (h + i) + r * (i + h)  # base GEMMs + gate/up LoRA + down LoRA
    return {
        # dispatch and combine: one row per (token, distinct remote expert rank) each way
        # (receivers replicate, senders pre-sum); uniform-routing expectation x 0.9 for skew
        "nvlink_bytes_per_rank": 2 * 0.9 * t * remote * h * b,
        # experts on the average load t*k rows (the busiest rank has at least that) + router
        "flops_per_rank": 2.0 * t * k * per_row + 2.0 * t * h * e,
        # read the local experts' weights and adapters, the tokens; write the output
        "hbm_bytes_per_rank": (3.0 * h * i + 3.0 * r * (h + i)) * loc * b + 2.0 * t * h * b + 4.0 * e * h,
    }
