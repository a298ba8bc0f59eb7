import torch

_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}


def make_inputs(rank, world_size, seed, size, device="cpu"):
    # the latent is replicated: every rank holds the whole video latent and decodes its tiles
    g = torch.Generator(device=device).manual_seed(seed * 1_000_003 + 999_983)
    z = torch.randn(1, size["channels"], size["t"], size["h"], size["w"], generator=g, device=device)
    return (z.to(getattr(torch, size["dtype"])), size["tile_t"], size["tile_h"], size["tile_w"],
            float(size["spatial_overlap"]), float(size["temporal_overlap"]), size["s_up"],
            size["t_up"], 1, False)


def roofline(world_size, size):
    e = _BYTES[size["dtype"]]
    video = 3 * size["t"] * size["t_up"] * size["h"] * size["s_up"] * size["w"] * size["s_up"]
    return {
        # z is replicated, so a rank may decode every tile itself and move nothing: the only
        # bound that holds for every strategy is 0 bytes (sharing the tiles costs
        # (w-1)/w of the video per rank over NVLink instead of (w-1)/w of the decoding)
        "nvlink_bytes_per_rank": 0.0,
        # trilinear upsampling: >= 7 flops (3 lerps) per output element, at best split w ways
        "flops_per_rank": 7.0 * video / world_size,
        # every rank writes the whole video once (reading the latent is smaller)
        "hbm_bytes_per_rank": float(video * e),
    }
