import torch

_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}


def _tiles(size):
    """Latent tile boxes ((t0, t1), (h0, h1), (w0, w1)) in tile order, as the reference cuts them."""
    tt = size["tile_t"]  # first_frame_as_image is False in every size
    tile = (tt, size["tile_h"], size["tile_w"])
    overlap = (float(size["temporal_overlap"]), float(size["spatial_overlap"]), float(size["spatial_overlap"]))
    extent = (size["t"], size["h"], size["w"])
    stride = [int(tile[d] * (1 - overlap[d])) for d in range(3)]
    counts = [-(-extent[d] // stride[d]) for d in range(3)]
    boxes = []
    for i in range(counts[0] * counts[1] * counts[2]):
        idx = (i // (counts[1] * counts[2]), (i // counts[2]) % counts[1], i % counts[2])
        boxes.append(tuple((idx[d] * stride[d], min(extent[d], idx[d] * stride[d] + tile[d])) for d in range(3)))
    return boxes


def owned_mask(size, rank, world_size):
    """Latent elements inside the tiles this rank owns: tiles dealt round-robin by size,
    largest first (ties in tile order), as in upstream MAGI-1."""
    boxes = _tiles(size)
    numel = [(b[0][1] - b[0][0]) * (b[1][1] - b[1][0]) * (b[2][1] - b[2][0]) for b in boxes]
    by_size = sorted(range(len(boxes)), key=lambda i: numel[i], reverse=True)
    mask = torch.zeros(size["t"], size["h"], size["w"], dtype=torch.bool)
    for i in by_size[rank::world_size]:
        (t0, t1), (h0, h1), (w0, w1) = boxes[i]
        mask[t0:t1, h0:h1, w0:w1] = True
    return mask


def make_inputs(rank, world_size, seed, size, device="cpu"):
    # Upstream replicates the latent, so decoding every tile locally and moving nothing is
    # correct there and measures no communication. Here a rank holds only the latent of the
    # tiles it owns (zero elsewhere): the other ranks' tiles have to come over the links.
    g = torch.Generator(device=device).manual_seed(seed * 1_000_003 + 999_983)
    z = torch.randn(1, size["channels"], size["t"], size["h"], size["w"], generator=g, device=device)
    z = z * owned_mask(size, rank, world_size).to(device)
    return (z.to(getattr(torch, size["dtype"])), size["tile_t"], size["tile_h"], size["tile_w"],
            float(size["spatial_overlap"]), float(size["temporal_overlap"]), size["s_up"],
            size["t_up"], 1, False)


def roofline(world_size, size):
    e = _BYTES[size["dtype"]]
    video = 3 * size["t"] * size["t_up"] * size["h"] * size["s_up"] * size["w"] * size["s_up"]
    plane = size["t"] * size["h"] * size["w"]
    # Every rank outputs the whole video, so it needs every latent element it does not own,
    # as latent (the cheapest form) or decoded: the rank owning most receives least.
    unowned = min(plane - int(owned_mask(size, r, world_size).sum()) for r in range(world_size))
    return {
        "nvlink_bytes_per_rank": float(unowned * size["channels"] * e),
        # trilinear upsampling: >= 7 flops (3 lerps) per output element, at best split w ways
        "flops_per_rank": 7.0 * video / world_size,
        # every rank writes the whole video once (reading the latent is smaller)
        "hbm_bytes_per_rank": float(video * e),
    }
