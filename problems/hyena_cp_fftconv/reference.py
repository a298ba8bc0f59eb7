import torch
import torch.distributed as dist


def _chunk_order(world: int, zigzag: bool) -> list[int]:
    """Global chunk ids in the order the ranks' local sequences list them (2 chunks per rank)."""
    if not zigzag:
        return list(range(2 * world))
    return [c for r in range(world) for c in (r, 2 * world - 1 - r)]


def _seq_to_channels(x: torch.Tensor, world: int, zigzag: bool) -> torch.Tensor:
    """[B, C, L/w] (this rank's positions, all channels) -> [B, C/w, L] (all positions, natural order)."""
    b, c, n = x.shape
    send = x.reshape(b, world, c // world, n).transpose(0, 1).contiguous()
    recv = torch.empty_like(send)
    dist.all_to_all_single(recv, send)
    # recv[i] = rank i's positions for my channels; as chunks in the ranks' listing order
    chunks = recv.permute(1, 2, 0, 3).reshape(b, c // world, 2 * world, n // 2)
    # reorder by slicing, not index_select with a device index built from a host list: that
    # index is a pageable host-to-device copy, which makes the host wait for the GPU every call
    where = {chunk: i for i, chunk in enumerate(_chunk_order(world, zigzag))}
    return torch.cat([chunks[:, :, where[c_]] for c_ in range(2 * world)], dim=2)


def _channels_to_seq(y: torch.Tensor, world: int, zigzag: bool) -> torch.Tensor:
    """[B, C/w, L] -> [B, C, L/w] in this rank's position layout."""
    b, cl, length = y.shape
    n = length // world
    natural = y.reshape(b, cl, 2 * world, n // 2)
    listed = torch.stack([natural[:, :, c_] for c_ in _chunk_order(world, zigzag)], dim=2)
    send = listed.reshape(b, cl, world, n).permute(2, 0, 1, 3).contiguous()
    recv = torch.empty_like(send)
    dist.all_to_all_single(recv, send)
    return recv.transpose(0, 1).reshape(b, world * cl, n)


def _causal_fftconv(u: torch.Tensor, h: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """y[t] = sum_{s<=t} h[s] u[t-s] + bias * u[t] for a float32 u, via zero-padded FFTs."""
    length = u.shape[-1]
    n = 2 * length
    spec = torch.fft.rfft(u, n=n) * torch.fft.rfft(h.float(), n=n)
    y = torch.fft.irfft(spec, n=n)[..., :length]
    return y + u * bias.float().unsqueeze(-1)


@torch.no_grad()
def solution(x1: torch.Tensor, x2: torch.Tensor, v: torch.Tensor, h: torch.Tensor,
             conv_bias: torch.Tensor, num_groups: int, group_dim: int, zigzag: bool) -> torch.Tensor:
    world, rank = dist.get_world_size(), dist.get_rank()
    x1f = _seq_to_channels(x1, world, zigzag)
    x2f = _seq_to_channels(x2, world, zigzag)
    vf = _seq_to_channels(v, world, zigzag)
    local_channels = x1f.shape[1]
    c0 = rank * local_channels
    groups = torch.arange(c0, c0 + local_channels, device=h.device) // group_dim
    h_local = h[groups, : x1f.shape[-1]]  # one long filter per channel (shared within a group)
    # float32 from the inputs to the output, rounded once: bf16 roundings of u, y and x1*y on
    # the way put the result 1.75x the bf16 tolerance from the exact math at bench (CPU; 1.52x on H200)
    z = _causal_fftconv(x2f.float() * vf.float(), h_local, conv_bias[c0:c0 + local_channels])
    out = _channels_to_seq((x1f.float() * z).to(x1.dtype), world, zigzag)
    return out.transpose(1, 2).contiguous()
