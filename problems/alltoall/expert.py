"""Expert candidate for `alltoall`: x[W*rows, cols] -> out chunk j = chunk r of
rank j's input (dist.all_to_all_single semantics), [W*rows, cols]. Any dtype.

Symmetric memory + NVRTC kernels, no NCCL. Per call: one local pass copies
the W-1 chunks peers need into this rank's symmetric slot and our own chunk r
into output chunk r, one symmetric barrier, then one kernel reads chunk r of
every peer's slot over NVLink into output chunk j. Bytes each rank receives:
(W-1) * C, C = chunk bytes (the minimum).

Measured (2 x H200, benchmarks/results/experts_standalone.md): bench 1024 rows per chunk
0.104 ms vs NCCL 0.071 ms (bare op), fraction 0.22; 4096 rows per chunk 0.190 ms vs 0.158 ms,
fraction 0.48. COPY_ENGINE: 0.136 / 0.242 ms; PIPELINED: 0.146 / 0.296 ms.
Fast path (FAST, the default; see _Plan), benchmarks/results/experts_graphs.md, two passes
in one run: bench 0.082 / 0.097 ms vs 0.105 / 0.109 ms for the barrier path (NCCL bare op
0.098 / 0.110 ms); 4096 rows per chunk 0.224 / 0.208 ms vs 0.215 / 0.203 ms (NCCL 0.213 /
0.222 ms in the fast rows, 0.161 in the barrier-path rows: NCCL's own spread). Python per
call 0.022-0.032 ms vs 0.077-0.092 ms.
"""
# pkb:include ../_shared/symm_collectives.py
# The path taken whenever the fast path does not (FAST off, COPY_ENGINE, PIPELINED, a
# non-contiguous or unaligned input, a plan that failed to build): live, not a leftover.
def _barrier_path(x):
    x = _prep(x)
    W = dist.get_world_size()
    assert x.shape[0] % W == 0, "alltoall needs dim 0 divisible by world size"
    nb = x.numel() * x.element_size()
    cb = nb // W  # chunk bytes
    st = _state("alltoall", nb, x.dtype, x.device)
    r = st.rank
    s = st.next_slot()
    out = torch.empty_like(x)
    vec = _vec_ok(cb)
    if PIPELINED and vec:
        cu = cb // 16
        mine = (r * cu, (r + 1) * cu)
        _pp(st, s, x, out, 0, W * cu, skip=mine, own=mine, own_out=r * cu, cons=mine, out_stride=cu)
        return out
    tasks = [(cb, -1, j * cb, r, j * cb, -2, 0) if j != r else (cb, -1, r * cb, -1, r * cb, -2, 0) for j in range(W)]
    _copy(st, s, x, out, tasks, vec)
    st.barrier()
    _pull(st, s, x, out, [(cb, j, r * cb, -1, j * cb, -2, 0) for j in range(W) if j != r], vec)
    return out


def _fast_plan(x):
    W = dist.get_world_size()
    if x.dim() < 1 or x.shape[0] % W:
        return None
    nb = x.numel() * x.element_size()
    cb = nb // W
    if cb % 16:
        return None
    st = _state("alltoall", nb, x.dtype, x.device)  # same buffer as the path above
    r = st.rank

    def make(s):
        local = [(cb, -1, j * cb, r, j * cb, -2, 0) if j != r else (cb, -1, r * cb, -1, r * cb, -2, 0) for j in range(W)]
        return [_fc(st, s, -1, 0, local),
                _fc(st, s, 0, -1, [(cb, j, r * cb, -1, j * cb, -2, 0) for j in range(W) if j != r])]

    return _Plan(st, make, x.shape, x.dtype, x.device)


def solution(x):
    out = _fast_call(x, _fast_plan)
    return out if out is not None else _barrier_path(x)
