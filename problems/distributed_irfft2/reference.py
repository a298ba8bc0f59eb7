import torch
import torch.distributed as dist


def _all_gather_complex(x: torch.Tensor, dim: int) -> torch.Tensor:
    world = dist.get_world_size()
    xr = torch.view_as_real(x.contiguous())
    parts = [torch.empty_like(xr) for _ in range(world)]
    dist.all_gather(parts, xr)
    return torch.cat([torch.view_as_complex(p) for p in parts], dim=dim)


@torch.no_grad()
def solution(x: torch.Tensor, s: list[int], dim: list[int], norm: str) -> torch.Tensor:
    world, rank = dist.get_world_size(), dist.get_rank()
    d0, d1 = (d % x.dim() for d in dim)
    n0, n1 = s
    rows = x.shape[d0]
    # Hermitian completion along d1: bin n1-k of row h is conj(bin k of row (-h) mod n0)
    full = _all_gather_complex(x, d0)  # [.., n0, n1/2+1] on every rank
    mine = torch.arange(rank * rows, (rank + 1) * rows, device=x.device)
    mirrored = full.index_select(d0, (-mine) % n0)
    upper = mirrored.narrow(d1, 1, n1 - n1 // 2 - 1).conj().flip(d1)  # bins n1/2+1 .. n1-1
    ext = torch.cat([x, upper], dim=d1)  # [.., rows, n1]
    y1 = torch.fft.ifft(ext, n=n1, dim=d1, norm=norm)
    # all-to-all transpose: chunk j of d1 goes to rank j; row slabs come back in rank order
    send = [torch.view_as_real(c.contiguous()) for c in y1.chunk(world, dim=d1)]
    recv = [torch.empty_like(send[0]) for _ in range(world)]
    dist.all_to_all(recv, send)
    y2 = torch.cat([torch.view_as_complex(t) for t in recv], dim=d0)  # [.., n0, n1/w]
    return torch.fft.ifft(y2, n=n0, dim=d0, norm=norm).real.contiguous()
