import torch
import torch.distributed as dist

_GROUPS: dict = {}


def _grid_groups(inner: int):
    """(inner, outer) groups of this rank for rank = outer_index * inner + inner_index:
    the inner group is `inner` consecutive ranks, the outer group the ranks sharing
    inner_index. Made once per world (every rank creates every group, in the same order)."""
    world, rank = dist.get_world_size(), dist.get_rank()
    key = (id(dist.group.WORLD), world, inner)
    if key not in _GROUPS:
        inners = [dist.new_group(list(range(o * inner, (o + 1) * inner))) for o in range(world // inner)]
        outers = [dist.new_group(list(range(i, world, inner))) for i in range(inner)]
        _GROUPS[key] = (inners, outers)
    inners, outers = _GROUPS[key]
    return inners[rank // inner], outers[rank % inner]


def _transpose(x: torch.Tensor, split_dim: int, cat_dim: int, group) -> torch.Tensor:
    """all-to-all inside `group`: chunk j of split_dim goes to group rank j; the chunks
    received are concatenated along cat_dim in group-rank order."""
    n = group.size()
    send = [c.contiguous() for c in x.chunk(n, dim=split_dim)]
    shape = list(send[0].shape)
    recv = [x.new_empty(shape) for _ in range(n)]
    dist.all_to_all(recv, send, group=group)
    return torch.cat(recv, dim=cat_dim)


def _disco_contraction(x, psi_idx, psi_vals, kernel, nlat_out, nlon_out):
    """y[b, c, k, ho, po] = sum over entries (k, ho, hi*nlon + l) of val * x[b, c, hi, (l + po*pscale) % nlon]:
    the filter rotated to every output longitude, as one sparse matrix product."""
    b, c, nl, nlon = x.shape
    pscale = nlon // nlon_out
    hi, lon = psi_idx[2] // nlon, psi_idx[2] % nlon
    po = torch.arange(nlon_out, device=x.device).repeat_interleave(psi_idx.shape[1])
    rows = (po * kernel + psi_idx[0].repeat(nlon_out)) * nlat_out + psi_idx[1].repeat(nlon_out)
    cols = hi.repeat(nlon_out) * nlon + (lon.repeat(nlon_out) + po * pscale) % nlon
    # Entries sorted by (row, col) and marked coalesced: sparse.mm coalesces an unmarked COO
    # first, and coalescing reads its unique count back to the host every call. The entries
    # are distinct (one per filter entry and output longitude), so the sort alone is the
    # coalesce, with the same operator and no read-back.
    ncols = nl * nlon
    key, order = torch.sort(rows * ncols + cols)
    m = torch.sparse_coo_tensor(torch.stack([key // ncols, key % ncols]), psi_vals.repeat(nlon_out)[order],
                                (nlon_out * kernel * nlat_out, ncols), check_invariants=False, is_coalesced=True)
    y = torch.sparse.mm(m, x.reshape(b * c, nl * nlon).T)  # [(po, k, ho), (b, c)]
    return y.view(nlon_out, kernel, nlat_out, b, c).permute(3, 4, 1, 2, 0)


@torch.no_grad()
def solution(x: torch.Tensor, psi_idx: torch.Tensor, psi_vals: torch.Tensor, weight: torch.Tensor,
             bias: torch.Tensor, groups: int, nlat_out: int, nlon_out: int) -> torch.Tensor:
    az = 2 if dist.get_world_size() % 2 == 0 else 1
    az_group, polar_group = _grid_groups(az)  # rank = polar_index * az + az_index
    polar_rank = dist.get_rank(polar_group)
    # channels split over the azimuth group, whole longitude rings on each rank
    xt = _transpose(x, 1, 3, az_group) if az > 1 else x
    # the kernel size from the weight's shape: reading it from psi_idx would wait on the GPU
    y = _disco_contraction(xt, psi_idx, psi_vals, weight.shape[2], nlat_out, nlon_out)
    y = y.contiguous()
    # sum the contributions of every polar slab of input latitudes, keep this rank's output rows
    dist.all_reduce(y, group=polar_group)
    y = y.chunk(polar_group.size(), dim=3)[polar_rank]
    # back to all channels and this rank's longitudes
    y = _transpose(y, 4, 1, az_group) if az > 1 else y
    b, c, k, h, w = y.shape
    out = torch.einsum("bgckxy,gock->bgoxy", y.reshape(b, groups, c // groups, k, h, w),
                       weight.reshape(groups, -1, weight.shape[1], weight.shape[2]))
    return out.reshape(b, -1, h, w) + bias.view(1, -1, 1, 1)
