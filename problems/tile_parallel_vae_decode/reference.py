import torch
import torch.distributed as dist
import torch.nn.functional as F


def _unravel(index: int, counts: tuple) -> tuple:
    nt, nh, nw = counts
    return index // (nh * nw), (index // nw) % nh, index % nw


def _ravel(t: int, h: int, w: int, counts: tuple) -> int:
    return (t * counts[1] + h) * counts[2] + w


def _decode(tile: torch.Tensor, t_up: int, s_up: int) -> torch.Tensor:
    """The stand-in decoder: trilinear upsampling of the first 3 latent channels (cycled when
    there are fewer), in fp32, rounded to the latent's dtype."""
    channels = [c % tile.shape[1] for c in range(3)]
    up = F.interpolate(tile[:, channels].float(), scale_factor=(t_up, s_up, s_up),
                       mode="trilinear", align_corners=False)
    return up.to(tile.dtype)


def _all_gather_tiles(local: list, owners: list, shapes: dict, like: torch.Tensor) -> dict:
    """Uneven all-gather of tiles as an all-to-all that sends the same block to every rank."""
    world = dist.get_world_size()
    flat = torch.cat([t.reshape(-1) for t in local]) if local else like.new_empty(0)
    numel = {i: s[0] * s[1] * s[2] * s[3] * s[4] for i, s in shapes.items()}
    sizes = [sum(numel[i] for i in owned) for owned in owners]
    recv = like.new_empty(sum(sizes))
    dist.all_to_all_single(recv, flat.repeat(world), output_split_sizes=sizes,
                           input_split_sizes=[flat.numel()] * world)
    tiles, offset = {}, 0
    for owned in owners:
        for i in owned:
            tiles[i] = recv[offset:offset + numel[i]].view(shapes[i])
            offset += numel[i]
    return tiles


def _blend(prev: torch.Tensor, cur: torch.Tensor, extent: int, dim: int) -> torch.Tensor:
    """Cross-fade the first `extent` slices of `cur` with the last ones of `prev` along dim."""
    extent = min(prev.shape[dim], cur.shape[dim], extent)
    if extent <= 0:
        return cur
    shape = [1] * cur.dim()
    shape[dim] = extent
    ratio = (torch.arange(extent, device=cur.device, dtype=torch.float32) / extent).view(shape)
    head = cur.narrow(dim, 0, extent).float()
    tail = prev.narrow(dim, prev.shape[dim] - extent, extent).float()
    out = cur.clone()
    out.narrow(dim, 0, extent).copy_(tail * (1 - ratio) + head * ratio)
    return out


@torch.no_grad()
def solution(z: torch.Tensor, tile_t: int, tile_h: int, tile_w: int, spatial_overlap: float,
             temporal_overlap: float, spatial_upsample: int, temporal_upsample: int,
             sr_ratio: int, first_frame_as_image: bool) -> torch.Tensor:
    world, rank = dist.get_world_size(), dist.get_rank()
    tile_t = tile_t + int(first_frame_as_image)
    s_up = spatial_upsample * sr_ratio
    t_up = temporal_upsample
    stride = (int(tile_t * (1 - temporal_overlap)), int(tile_h * (1 - spatial_overlap)),
              int(tile_w * (1 - spatial_overlap)))
    blend = (int(tile_t * t_up * temporal_overlap), int(tile_h * s_up * spatial_overlap),
             int(tile_w * s_up * spatial_overlap))
    keep = (tile_t * t_up - blend[0], tile_h * s_up - blend[1], tile_w * s_up - blend[2])
    counts = tuple(-(-z.shape[2 + d] // stride[d]) for d in range(3))
    total = counts[0] * counts[1] * counts[2]

    latent = {}
    for i in range(total):
        t, h, w = _unravel(i, counts)
        latent[i] = z[:, :, t * stride[0]:t * stride[0] + tile_t, h * stride[1]:h * stride[1] + tile_h,
                      w * stride[2]:w * stride[2] + tile_w]
    # balance by size: largest tiles first, dealt round-robin
    by_size = sorted(range(total), key=lambda i: latent[i].numel(), reverse=True)
    owners = [by_size[r::world] for r in range(world)]

    decoded_shape = {i: (1, 3, x.shape[2] * t_up, x.shape[3] * s_up, x.shape[4] * s_up)
                     for i, x in latent.items()}
    mine = [_decode(latent[i], t_up, s_up) for i in owners[rank]]
    decoded = _all_gather_tiles(mine, owners, decoded_shape, z)

    blended = []
    for i in owners[rank]:
        t, h, w = _unravel(i, counts)
        tile = decoded[i]
        if t > 0:
            tile = _blend(decoded[_ravel(t - 1, h, w, counts)], tile, blend[0], 2)
        if h > 0:
            tile = _blend(decoded[_ravel(t, h - 1, w, counts)], tile, blend[1], 3)
        if w > 0:
            tile = _blend(decoded[_ravel(t, h, w - 1, counts)], tile, blend[2], 4)
        blended.append(tile[:, :, :keep[0], :keep[1], :keep[2]].contiguous())
    kept_shape = {i: (1, 3, min(keep[0], s[2]), min(keep[1], s[3]), min(keep[2], s[4]))
                  for i, s in decoded_shape.items()}
    kept = _all_gather_tiles(blended, owners, kept_shape, z)

    rows_t = []
    for t in range(counts[0]):
        rows_h = [torch.cat([kept[_ravel(t, h, w, counts)] for w in range(counts[2])], dim=4)
                  for h in range(counts[1])]
        rows_t.append(torch.cat(rows_h, dim=3))
    return torch.cat(rows_t, dim=2)
