"""Expert candidate for `broadcast`: x[rows, cols] -> rank 0's x on every rank.
Any dtype.

Symmetric memory + NVRTC kernels, no NCCL. Rank 0 copies x into its
symmetric slot and its output in one pass; one symmetric barrier.
  W = 2 (direct): rank 1 reads the whole slot of rank 0 over NVLink.
    Rank 1 receives N bytes, rank 0 sends N: the minimum.
  W >= 3 (scatter + all-gather): the tensor is cut into W-1 slices; rank k>=1
    pulls slice k from rank 0 (into its output and its own slot), a second
    barrier, then pulls the other slices from the ranks that hold them.
    Every rank receives N, and rank 0 sends N instead of (W-1)*N (7 N at
    W = 8), so no single link carries more than N.

Measured (2 x H200, benchmarks/results/experts_standalone.md): 0.307 ms vs NCCL 0.249 ms
(bare op) / 0.268 ms (reference), roofline fraction 0.59. Scatter path forced at W=2:
0.290 ms; COPY_ENGINE: 0.327 ms.
Fast path (FAST, the default; see _Plan), benchmarks/results/experts_graphs.md, two passes
in one run: 0.240 / 0.235 ms vs 0.281 / 0.335 ms for the barrier path (NCCL bare op 0.223 /
0.222 ms), roofline fraction 0.78-0.80; scatter path forced at W=2: 0.285 / 0.246 ms vs
0.315 / 0.366 ms. Python per call 0.023-0.035 ms vs 0.049-0.106 ms.
"""
# pkb:include ../_shared/symm_collectives.py
SCATTER_MIN_WORLD = 3


# The path taken whenever the fast path does not (FAST off, COPY_ENGINE, PIPELINED, a
# non-contiguous or unaligned input, a plan that failed to build): live, not a leftover.
def _barrier_path(x):
    x = _prep(x)
    nb = x.numel() * x.element_size()
    st = _state("broadcast", nb, x.dtype, x.device)
    W, r = st.world, st.rank
    s = st.next_slot()
    out = torch.empty_like(x)
    vec = _vec_ok(nb)
    if r == 0:
        _copy(st, s, x, out, [(nb, -1, 0, 0, 0, -1, 0)], vec)
    st.barrier()
    if W < SCATTER_MIN_WORLD:
        if r != 0:
            _pull(st, s, x, out, [(nb, 0, 0, -1, 0, -2, 0)], vec)
        return out
    unit = 16 if vec else 1
    nu = nb // unit
    b = [nu * k // (W - 1) * unit for k in range(W)]  # slice k+1 = [b[k], b[k+1])
    if r != 0:
        lo, hi = b[r - 1], b[r]
        _copy(st, s, x, out, [(hi - lo, 0, lo, -1, lo, r, lo)], vec)
    st.barrier()
    if r != 0:
        _pull(st, s, x, out, [(b[m] - b[m - 1], m, b[m - 1], -1, b[m - 1], -2, 0)
                              for m in range(1, W) if m != r], vec)
    return out


def _fast_plan(x):
    nb = x.numel() * x.element_size()
    if nb % 16:
        return None
    st = _state("broadcast", nb, x.dtype, x.device)  # same buffer as the path above
    W, r = st.world, st.rank

    def make(s):
        if W < SCATTER_MIN_WORLD:
            if r == 0:  # x -> slot + out, signal; then wait for the readers (slot reuse)
                return [_fc(st, s, -1, 0, [(nb, -1, 0, 0, 0, -1, 0)]), _fc(st, s, 0, -1, [])]
            return [_fc(st, s, -1, 0, []), _fc(st, s, 0, -1, [(nb, 0, 0, -1, 0, -2, 0)])]
        nu = nb // 16
        b = [nu * k // (W - 1) * 16 for k in range(W)]  # slice k+1 = [b[k], b[k+1])
        if r == 0:
            return [_fc(st, s, -1, 0, [(nb, -1, 0, 0, 0, -1, 0)]), _fc(st, s, 0, 1, [])]
        lo, hi = b[r - 1], b[r]
        return [_fc(st, s, -1, 0, []),
                _fc(st, s, 0, 1, [(hi - lo, 0, lo, -1, lo, r, lo)]),  # my slice from rank 0 -> out + own slot
                _fc(st, s, 1, -1, [(b[m] - b[m - 1], m, b[m - 1], -1, b[m - 1], -2, 0) for m in range(1, W) if m != r])]

    return _Plan(st, make, x.shape, x.dtype, x.device)


def solution(x):
    out = _fast_call(x, _fast_plan)
    return out if out is not None else _barrier_path(x)
