"""Expert candidate for `allreduce`: x[rows, cols] bf16 -> sum over ranks.

Symmetric memory + NVRTC kernels, no NCCL. Per call: copy x into this rank's
symmetric slot (local HBM, ~30 us for 64 MiB at ~4 TB/s), one symmetric
barrier, then every rank reads its peers' slots over NVLink.

One-shot vs two-shot (N = bytes per rank, W = world size), bytes each rank
receives over NVLink:
  one-shot (read all peers' full inputs, reduce locally):   (W-1) * N
  two-shot (reduce my 1/W slice, then gather the slices):   2 * (W-1)/W * N
At W = 2 both receive N, and one-shot needs one barrier instead of two, so it
is used for W = 2; from W = 3 two-shot moves fewer bytes (W=8: 1.75 N vs 7 N)
and is used (TWO_SHOT_MIN_WORLD).
Non-bf16 dtypes take a slower torch elementwise path over peer views.

Measured (2 x H200, benchmarks/results/experts_standalone.md): 0.332 ms vs NCCL 0.270 ms
(bare op) / 0.294 ms (reference), roofline fraction 0.55; ~0.12 ms of it is Python issuing the
call. Two-shot forced at W=2: 0.329 ms; PIPELINED: 0.356 ms.
Fast path (FAST, see _Plan; OFF by default for this problem, see FAST below): correct,
Python per call 0.051-0.055 ms vs 0.084-0.106 ms, but isolated calls not faster at W=2
(benchmarks/results/experts_graphs.md).
"""
# pkb:include ../_shared/symm_collectives.py
TWO_SHOT_MIN_WORLD = 3  # the device check also forces 2 to test the two-shot path


def _solution_generic(x):
    es = x.element_size()
    st = _state("allreduce-generic", x.numel() * es, x.dtype, x.device)
    s = st.next_slot()
    n = x.numel()
    off = s * st.slot_bytes // es
    st.buf[off:off + n].copy_(x.view(-1))
    st.barrier()
    acc = x.view(-1).clone()
    for k in range(st.world):
        if k != st.rank:
            acc += st.handle.get_buffer(k, (2 * st.slot_bytes // es,), x.dtype)[off:off + n]
    return acc.view(x.shape)


# The path taken whenever the fast path does not (FAST off, COPY_ENGINE, PIPELINED, a
# non-contiguous or unaligned input, a plan that failed to build): live, not a leftover.
def _barrier_path(x):
    x = _prep(x)
    if x.dtype != torch.bfloat16:
        return _solution_generic(x)
    n = x.numel()
    nbytes = n * 2
    in_region = _round_up(nbytes, 256)
    # slot = [input copy | reduced slice region (two-shot)]
    st = _state("allreduce", 2 * in_region, x.dtype, x.device)
    W, r = st.world, st.rank
    assert W <= _MAXW, "pull_reduce handles up to 8 ranks"
    s = st.next_slot()
    vec = _vec_ok(nbytes)
    upe = 8 if vec else 1  # bf16 elements per reduce unit
    nu = n // upe
    out = torch.empty_like(x)
    if PIPELINED and vec and W < TWO_SHOT_MIN_WORLD:
        _pp(st, s, x, out, 1, nu, cons=(0, nu))
        return out
    st.slot_bytes_view(s)[:nbytes].copy_(x.view(-1).view(torch.uint8))
    st.barrier()
    red_k = _kernels()[1]
    if W < TWO_SHOT_MIN_WORLD:
        red_k(_grid(nu), (_THREADS, 1, 1), [st.ptrs[s], x, out, r, W, 0, 0, 0, -1, nu, int(vec)])
        return out
    # two-shot: slice boundaries in units, identical on every rank
    bounds = [nu * k // W for k in range(W + 1)]
    lo, hi = bounds[r], bounds[r + 1]
    red_off = in_region // 16 if vec else in_region // 2  # in reduce units
    red_k(_grid(max(hi - lo, 1)), (_THREADS, 1, 1),
          [st.ptrs[s], x, out, r, W, lo, lo, lo, red_off + lo, hi - lo, int(vec)])
    st.barrier()
    ub = 16 if vec else 2  # bytes per reduce unit
    tasks = []
    for j in range(W):
        if j != r:
            a, b = bounds[j], bounds[j + 1]
            tasks.append(((b - a) * ub, j, in_region + a * ub, -1, a * ub, -2, 0))
    _pull(st, s, x, out, tasks, vec)
    return out


# Off by default here (PKB_EXPERT_FAST=1 or FAST = True turns it on): on 2 x H200 the
# one-shot fast path was correct but not faster in isolated calls (0.315 / 0.341 ms vs
# 0.313 / 0.290 ms for the path above, two passes of benchmarks/results/experts_graphs.md;
# the same 0.254 ms per call back-to-back, so the GPU work is equal and the difference is
# run-to-run spread). The forced two-shot path was 0.297 / 0.336 vs 0.293 / 0.420 ms.
FAST = os.environ.get("PKB_EXPERT_FAST") == "1"


def _fast_plan(x):
    if x.dtype != torch.bfloat16 or (x.numel() * 2) % 16:
        return None
    nbytes = x.numel() * 2
    in_region = _round_up(nbytes, 256)
    st = _state("allreduce", 2 * in_region, x.dtype, x.device)  # same buffer as the path above
    W, r = st.world, st.rank
    if W > _MAXW:
        return None
    nu = nbytes // 16

    def make(s):
        publish = _fc(st, s, -1, 0, [(nbytes, -1, 0, r, 0, -2, 0)])  # x -> own slot, signal
        if W < TWO_SHOT_MIN_WORLD:
            return [publish, _fr(st, s, 0, -1, 0, 0, 0, -1, nu)]  # wait, sum peers' slots + x
        bounds = [nu * k // W for k in range(W + 1)]
        lo, hi = bounds[r], bounds[r + 1]
        red = in_region // 16
        tasks = [((bounds[j + 1] - bounds[j]) * 16, j, in_region + bounds[j] * 16, -1, bounds[j] * 16, -2, 0)
                 for j in range(W) if j != r]
        return [publish, _fr(st, s, 0, 1, lo, lo, lo, red + lo, hi - lo), _fc(st, s, 1, -1, tasks)]

    return _Plan(st, make, x.shape, x.dtype, x.device)


def solution(x):
    out = _fast_call(x, _fast_plan)
    return out if out is not None else _barrier_path(x)
