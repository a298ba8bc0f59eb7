"""Expert candidate for `halo_stencil`: one 5-point Jacobi step on a row-sharded grid, halo
rows from the neighbouring ranks, zero outside the global grid.

Symmetric memory, no NCCL. Each rank writes its first and last row (2 x cols fp32) into its
symmetric slot, one barrier, then reads the row above from rank r-1 and the row below from
rank r+1 over NVLink. The stencil is computed in place in the output, in the reference's
order of additions ((up + down) + left) + right, then * 0.25, so results are
bit-identical, without the reference's padded copies of the grid (torch.cat, F.pad) and
its four temporaries.
"""
# pkb:include ../_shared/symm_collectives.py
# pkb:include ../_shared/symm_compose.py


def solution(u):
    u = u.contiguous()
    rows, cols = u.shape
    sl = Slot("halo_stencil", 2 * cols * u.element_size(), u.device)
    W, r = sl.world, sl.rank
    sl.local(u.dtype, (2, cols)).copy_(torch.stack([u[0], u[-1]]))
    sl.barrier()
    zero = torch.zeros(cols, dtype=u.dtype, device=u.device)
    top = sl.peer(r - 1, u.dtype, (2, cols))[1] if r > 0 else zero
    bottom = sl.peer(r + 1, u.dtype, (2, cols))[0] if r < W - 1 else zero
    out = torch.empty_like(u)
    if rows == 1:
        torch.add(top, bottom, out=out[0])
    else:
        torch.add(top, u[1], out=out[0])
        torch.add(u[-2], bottom, out=out[-1])
        if rows > 2:
            torch.add(u[:-2], u[2:], out=out[1:-1])
    if cols > 1:
        out[:, 1:].add_(u[:, :-1])
        out[:, :-1].add_(u[:, 1:])
    out.mul_(0.25)
    return out
