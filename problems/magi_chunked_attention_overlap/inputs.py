import torch

_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}


def _spb(world_size, size):
    return -(-size["clip"] // world_size)  # tokens per rank per chunk (the chunk is padded)


def make_inputs(rank, world_size, seed, size, device="cpu"):
    dt = getattr(torch, size["dtype"])
    chunks, clip, hq, hkv, d = size["chunks"], size["clip"], size["q_heads"], size["kv_heads"], size["head_dim"]
    spb = _spb(world_size, size)
    g = torch.Generator(device=device).manual_seed(seed * 1_000_003 + rank)
    query = torch.randn(chunks * spb, hq, d, generator=g, device=device)
    key_value = torch.randn(chunks * spb, hkv, 2 * d, generator=g, device=device)
    # chunk-causal (autoregressive video chunks): chunk c attends to the keys of chunks 0..c
    starts = torch.zeros(chunks, dtype=torch.int64, device=device)
    ends = (torch.arange(chunks, device=device) + 1) * clip
    k_ranges = torch.stack([starts, ends], dim=1)
    return query.to(dt), key_value.to(dt), k_ranges, chunks, clip


def roofline(world_size, size):
    e = _BYTES[size["dtype"]]
    w = world_size
    chunks, clip, hq, hkv, d = size["chunks"], size["clip"], size["q_heads"], size["kv_heads"], size["head_dim"]
    spb = _spb(w, size)
    kv_heads_local = max(1, hkv // w)
    # head split: queries and KV move to their head owners and outputs come back, (w-1)/w of
    # the local query, KV and output blocks; or (ring style) queries stay and every other
    # rank's KV comes in: whichever is smaller
    ulysses = (w - 1) / w * chunks * spb * (2 * hq * d + w * kv_heads_local * 2 * d)
    ring = (w - 1) * chunks * spb * hkv * 2 * d
    moved = min(ulysses, ring)
    keys_seen = sum(c + 1 for c in range(chunks)) * clip  # sum over chunks of attended keys
    return {
        "nvlink_bytes_per_rank": moved * e,
        # QK^T and PV for this rank's heads over all (padded) query positions of each chunk
        "flops_per_rank": 4.0 * w * spb * keys_seen * (hq // w) * d,
        # read q, kv; write the output
        "hbm_bytes_per_rank": chunks * spb * (2 * hq * d + hkv * 2 * d) * e,
    }
