"""Expert candidate for `reduce_scatter`: x[W*rows, cols] bf16 -> rank r gets
sum over ranks of row-chunk r, [rows, cols].

Symmetric memory + NVRTC kernels, no NCCL. Per call: copy the W-1 chunks that
peers need (every chunk but our own) into this rank's symmetric slot (local),
one symmetric barrier, then one kernel reads chunk r from every peer's slot
over NVLink, adds our own chunk straight from x, and writes the output.
Bytes each rank receives over NVLink: (W-1) * C, C = chunk bytes: the minimum
for a reduce-scatter (no two-shot needed). Non-bf16 dtypes take a torch path.

Measured (2 x H200, benchmarks/results/experts_standalone.md): bench 1024x4096 rows per
chunk 0.125 ms vs NCCL 0.087 ms (bare op), fraction 0.18 (about 0.1 ms is Python issuing the
call); 4096x4096 per chunk 0.203 ms vs 0.183 ms, fraction 0.45. PIPELINED: 0.125 / 0.261 ms.
Fast path (FAST, the default; see _Plan), benchmarks/results/experts_graphs.md, two passes
in one run: bench 0.102 / 0.089 ms vs 0.138 / 0.198 ms for the barrier path (NCCL bare op
0.122 / 0.089 ms); 4096 rows per chunk 0.221 / 0.187 ms vs 0.211 / 0.243 ms (NCCL 0.232 /
0.198 ms). Python per call 0.021-0.036 ms vs 0.078-0.113 ms. Back-to-back: 0.045 ms per call
(NCCL 0.055 ms) at bench size, where the barrier path was host-bound (0.108-0.268 ms).
"""
# pkb:include ../_shared/symm_collectives.py
# The path taken whenever the fast path does not (FAST off, COPY_ENGINE, PIPELINED, a
# non-contiguous or unaligned input, a plan that failed to build): live, not a leftover.
def _barrier_path(x):
    x = _prep(x)
    W = dist.get_world_size()
    assert x.shape[0] % W == 0, "reduce_scatter needs dim 0 divisible by world size"
    rows = x.shape[0] // W
    n = x.numel()
    c = n // W  # elements per chunk
    es = x.element_size()
    st = _state("reduce_scatter", n * es, x.dtype, x.device)
    r = st.rank
    s = st.next_slot()
    flat = x.view(-1)
    off = s * st.slot_bytes // es
    if PIPELINED and x.dtype == torch.bfloat16 and _vec_ok(c * 2) and W <= _MAXW:
        cu = c * 2 // 16
        out = torch.empty((rows,) + tuple(x.shape[1:]), dtype=x.dtype, device=x.device)
        _pp(st, s, x, out, 1, W * cu, skip=(r * cu, (r + 1) * cu), cons=(r * cu, (r + 1) * cu))
        return out
    if r > 0:
        st.buf[off:off + r * c].copy_(flat[:r * c])
    if r < W - 1:
        st.buf[off + (r + 1) * c:off + n].copy_(flat[(r + 1) * c:])
    st.barrier()
    if x.dtype != torch.bfloat16:
        acc = flat[r * c:(r + 1) * c].clone()
        for k in range(W):
            if k != r:
                acc += st.handle.get_buffer(k, (2 * st.slot_bytes // es,), x.dtype)[off + r * c:off + (r + 1) * c]
        return acc.view(rows, *x.shape[1:])
    assert W <= _MAXW, "pull_reduce handles up to 8 ranks"
    vec = _vec_ok(c * 2)
    upe = 8 if vec else 1
    out = torch.empty((rows,) + tuple(x.shape[1:]), dtype=x.dtype, device=x.device)
    red_k = _kernels()[1]
    cu = c // upe
    red_k(_grid(cu), (_THREADS, 1, 1), [st.ptrs[s], x, out, r, W, r * cu, r * cu, 0, -1, cu, int(vec)])
    return out


def _fast_plan(x):
    W = dist.get_world_size()
    if x.dtype != torch.bfloat16 or x.dim() < 1 or x.shape[0] % W or W > _MAXW:
        return None
    n = x.numel()
    cb = n // W * 2  # chunk bytes
    if cb % 16:
        return None
    st = _state("reduce_scatter", n * 2, x.dtype, x.device)  # same buffer as the path above
    r = st.rank
    cu = cb // 16

    def make(s):
        # every chunk but our own -> own slot (same offsets), signal; wait, sum chunk r
        return [_fc(st, s, -1, 0, [(r * cb, -1, 0, r, 0, -2, 0), ((W - 1 - r) * cb, -1, (r + 1) * cb, r, (r + 1) * cb, -2, 0)]),
                _fr(st, s, 0, -1, r * cu, r * cu, 0, -1, cu)]

    return _Plan(st, make, (x.shape[0] // W,) + tuple(x.shape[1:]), x.dtype, x.device)


def solution(x):
    out = _fast_call(x, _fast_plan)
    return out if out is not None else _barrier_path(x)
