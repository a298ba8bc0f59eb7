"""Expert candidate for `allgather`: x[rows, cols] -> cat over ranks along
dim 0, [W*rows, cols]. Any dtype (the kernels only move bytes).

Symmetric memory + NVRTC kernels, no NCCL. Per call: one local pass copies x
into this rank's symmetric slot and into its own output chunk (x read once),
one symmetric barrier, then one kernel reads the W-1 peer chunks over NVLink
straight into the output. Bytes each rank receives: (W-1) * N (the minimum).

Measured (2 x H200, benchmarks/results/experts_standalone.md): 0.314 ms vs NCCL 0.314 ms
(bare op) / 0.330 ms (reference), roofline fraction 0.58. PIPELINED: 0.293 ms (within the
~5% run-to-run spread of NCCL's own rows, so not made the default); COPY_ENGINE: 0.327 ms.
Fast path (FAST, the default; see _Plan): same kernels, barrier folded into them, launches
prebuilt. benchmarks/results/experts_graphs.md, two passes in one run: 0.352 / 0.285 ms vs
0.348 / 0.322 ms for the barrier path (Python per call 0.023-0.026 ms vs 0.086-0.114 ms),
NCCL bare op 0.342 / 0.309 ms in the same rows; back-to-back 0.271 vs NCCL 0.292 ms per call.
"""
# pkb:include ../_shared/symm_collectives.py
# The path taken whenever the fast path does not (FAST off, COPY_ENGINE, PIPELINED, a
# non-contiguous or unaligned input, a plan that failed to build): live, not a leftover.
def _barrier_path(x):
    x = _prep(x)
    nb = x.numel() * x.element_size()
    st = _state("allgather", nb, x.dtype, x.device)
    W, r = st.world, st.rank
    s = st.next_slot()
    out = torch.empty((W * x.shape[0],) + tuple(x.shape[1:]), dtype=x.dtype, device=x.device)
    vec = _vec_ok(nb)
    if PIPELINED and vec:
        nu = nb // 16
        _pp(st, s, x, out, 0, nu, own=(0, nu), own_out=r * nu, cons=(0, nu), out_stride=nu)
        return out
    # x -> own slot and own output chunk in one pass
    _copy(st, s, x, out, [(nb, -1, 0, r, 0, -1, r * nb)], vec)
    st.barrier()
    _pull(st, s, x, out, [(nb, j, 0, -1, j * nb, -2, 0) for j in range(W) if j != r], vec)
    return out


def _fast_plan(x):
    nb = x.numel() * x.element_size()
    if nb % 16:
        return None
    st = _state("allgather", nb, x.dtype, x.device)  # same buffer as the path above
    W, r = st.world, st.rank

    def make(s):
        return [_fc(st, s, -1, 0, [(nb, -1, 0, r, 0, -1, r * nb)]),  # x -> own slot + own out chunk
                _fc(st, s, 0, -1, [(nb, j, 0, -1, j * nb, -2, 0) for j in range(W) if j != r])]

    return _Plan(st, make, (st.world * x.shape[0],) + tuple(x.shape[1:]), x.dtype, x.device)


def solution(x):
    out = _fast_call(x, _fast_plan)
    return out if out is not None else _barrier_path(x)
