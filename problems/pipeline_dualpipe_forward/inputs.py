import math

import torch

_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}


def _stage_weights(stage, seed, size, device, dt):
    # seeded by the stage, not the rank: stage k lives on rank k and on rank world_size-1-k,
    # and both copies must be identical
    g = torch.Generator(device=device).manual_seed(seed * 1_000_003 + 500_009 + 17 * stage)
    h, f = size["hidden"], size["ffn"]
    w_gate_up = (torch.randn(2 * f, h, generator=g, device=device) / math.sqrt(h)).to(dt)
    # output projection scaled down (as deep-model inits do): the residual stream grows ~3%
    # per stage (std 1.2 after 8), and a rounding difference is amplified less on its way
    # down the chain (at 0.5 the bf16 spread of honest methods doubled)
    w_down = (0.35 * torch.randn(h, f, generator=g, device=device) / math.sqrt(f)).to(dt)
    return {"w_gate_up": w_gate_up, "w_down": w_down}


def _microbatches(stream, seed, size, device, dt):
    g = torch.Generator(device=device).manual_seed(seed * 1_000_003 + 1_009 * (stream + 1))
    shape = (size["num_microbatches"], size["micro_tokens"], size["hidden"])
    return torch.randn(shape, generator=g, device=device).to(dt)


def make_inputs(rank, world_size, seed, size, device="cpu"):
    dt = getattr(torch, size["dtype"])
    last = world_size - 1
    x_first = _microbatches(0, seed, size, device, dt) if rank == 0 else None
    x_last = _microbatches(1, seed, size, device, dt) if rank == last else None
    return (x_first, x_last,
            _stage_weights(rank, seed, size, device, dt),
            _stage_weights(last - rank, seed, size, device, dt),
            size["num_microbatches"], size["micro_tokens"])


def roofline(world_size, size):
    m, t, h, f = size["num_microbatches"], size["micro_tokens"], size["hidden"], size["ffn"]
    e = _BYTES[size["dtype"]]
    act = m * t * h * e  # one direction's micro-batches at one stage boundary
    stage_weights = 3 * h * f * e  # w_gate_up + w_down of one stage
    return {
        # rank 0 must end with the outputs of the micro-batches that enter at the last rank
        # (and the last rank those entering at rank 0): it receives at least its output's
        # bytes. The reference's middle ranks carry both directions (2x this)
        "nvlink_bytes_per_rank": float(act),
        # three GEMMs (gate, up, down: 6 t h f) per stage per micro-batch, two directions of
        # m micro-batches through world_size stages, over world_size ranks (the average)
        "flops_per_rank": 12.0 * m * t * h * f,
        # rank 0 reads its inputs and writes its outputs; and over all ranks every stage's
        # weights are read at least once (each stage has two copies, so no one rank must)
        # plus both inputs read and both outputs written: the average
        "hbm_bytes_per_rank": float(max(2 * act, stage_weights + 4 * act / world_size)),
    }
