# ---------------------------------------------------------------------------
# Composable symmetric-memory steps for experts that mix compute with a
# collective (GEMM + all-reduce, all-gather + GEMM, Ulysses all-to-alls, MoE
# dispatch, halo rows...). An expert includes this file AFTER
# ../_shared/symm_collectives.py, whose _state, _copy, _kernels, _grid,
# _THREADS, _MAXW, _MAXT, _round_up, _vec_ok and _prep it uses; no kernel is
# defined here.
#
# A Slot is this call's half of a two-slot symmetric byte buffer (the parity
# scheme of symm_collectives: one barrier per call suffices, since call e+2
# rewrites a slot only after call e+1's barrier, which every peer reaches only
# after its call-e reads, in stream order). Compute writes its result straight
# into the slot (matmul out=, fft out=, index_select out=), which saves the
# copy-in a plain collective needs; peers then read it over NVLink, either
# with the table-driven pull_copy / pull_reduce kernels (contiguous ranges) or
# with torch copies from peer views (strided layouts, small tensors).
# ---------------------------------------------------------------------------


class Slot:
    """This call's slot (nbytes, 256-byte aligned offsets) of a symmetric byte
    buffer keyed by tag: write the own part with local(), barrier(), then read
    any rank's part with peer()."""

    def __init__(self, tag, nbytes, device):
        self.st = _state(tag, max(int(nbytes), 16), torch.uint8, device)
        self.s = self.st.next_slot()
        self.rank, self.world = self.st.rank, self.st.world
        self.base = self.s * self.st.slot_bytes

    def _bytes(self, k):
        return self.st.buf if k == self.rank else self.st.peer(k)

    def local(self, dtype, shape, offset=0):
        return self.peer(self.rank, dtype, shape, offset)

    def peer(self, k, dtype, shape, offset=0):
        """Rank k's tensor at byte `offset` of its slot (a view of its memory over NVLink)."""
        n = 1
        for d in shape:
            n *= d
        es = torch.empty((), dtype=dtype).element_size()
        start = self.base + offset
        return self._bytes(k)[start:start + n * es].view(dtype).view(tuple(shape))

    def ptrs(self):
        """Device table of every rank's slot address (what the kernels index by rank)."""
        return self.st.ptrs[self.s]

    def barrier(self):
        self.st.barrier()


def allreduce_slot(tag, n, dtype, device):
    """A Slot for slot_all_reduce of n elements: [input | reduced slice] regions."""
    region = _round_up(n * torch.empty((), dtype=dtype).element_size(), 256)
    return Slot(tag, 2 * region, device)


def _reduce_k(sl, own, out, src_off, x_off, out_off, dst2_off, n):
    """pull_reduce (bf16 sum over ranks in rank order, fp32 accumulation), 16-byte units."""
    red_k = _kernels()[1]
    red_k(_grid(max(n, 1)), (_THREADS, 1, 1),
          [sl.ptrs(), own, out, sl.rank, sl.world, src_off, x_off, out_off, dst2_off, n, 1])


def _torch_sum(sl, dtype, shape, lo, hi, offset=0):
    """Generic fallback: sum over ranks (rank order, fp32 accumulation) of elements [lo, hi)
    of every rank's flat tensor at `offset`."""
    n = 1
    for d in shape:
        n *= d
    acc = torch.zeros(hi - lo, dtype=torch.float32, device=sl.st.buf.device)
    for k in range(sl.world):
        acc.add_(sl.peer(k, dtype, (n,), offset)[lo:hi])  # never in place on a rank's slot
    return acc.to(dtype)


TWO_SHOT_MIN_WORLD = 3  # one-shot at W = 2 (same bytes, one barrier), two-shot above


def slot_all_reduce(sl, shape, dtype):
    """Sum over ranks of the tensor each rank wrote at offset 0 of its allreduce_slot;
    returns a new tensor on every rank. Barriers included."""
    n = 1
    for d in shape:
        n *= d
    nbytes = n * torch.empty((), dtype=dtype).element_size()
    region = _round_up(nbytes, 256)
    W, r = sl.world, sl.rank
    out = torch.empty(shape, dtype=dtype, device=sl.st.buf.device)
    vec = dtype == torch.bfloat16 and nbytes % 16 == 0 and W <= _MAXW
    sl.barrier()
    if not vec:
        out.view(-1).copy_(_torch_sum(sl, dtype, (n,), 0, n))
        return out
    own = sl.local(torch.uint8, (2 * region,))
    nu = nbytes // 16
    if W < TWO_SHOT_MIN_WORLD:
        _reduce_k(sl, own, out, 0, 0, 0, -1, nu)
        return out
    bounds = [nu * k // W for k in range(W + 1)]
    lo, hi = bounds[r], bounds[r + 1]
    _reduce_k(sl, own, out, lo, lo, lo, region // 16 + lo, hi - lo)  # my slice -> out + own slot
    sl.barrier()
    tasks = [((bounds[j + 1] - bounds[j]) * 16, j, region + bounds[j] * 16, -1, bounds[j] * 16, -2, 0)
             for j in range(W) if j != r and bounds[j + 1] > bounds[j]]
    _copy(sl.st, sl.s, own, out, tasks, True)
    return out


def slot_reduce_scatter(sl, shape, dtype):
    """Rank r's row chunk of the sum over ranks of the [W * rows, ...] tensor each rank
    wrote at offset 0 of its slot; returns [rows, ...]. Barrier included."""
    W, r = sl.world, sl.rank
    n = 1
    for d in shape:
        n *= d
    c = n // W
    out_shape = (shape[0] // W,) + tuple(shape[1:])
    out = torch.empty(out_shape, dtype=dtype, device=sl.st.buf.device)
    sl.barrier()
    cb = c * torch.empty((), dtype=dtype).element_size()
    if dtype != torch.bfloat16 or cb % 16 or W > _MAXW:
        out.view(-1).copy_(_torch_sum(sl, dtype, (n,), r * c, (r + 1) * c))
        return out
    cu = cb // 16
    _reduce_k(sl, sl.local(torch.uint8, (n * 2,)), out, r * cu, r * cu, 0, -1, cu)
    return out


def all_gather_rows(tag, x):
    """cat over ranks along dim 0 (the allgather expert's barrier path): one local pass
    writes x into the own slot and the own output chunk, then peers' chunks are pulled."""
    x = _prep(x)
    nb = x.numel() * x.element_size()
    sl = Slot(tag, nb, x.device)
    W, r = sl.world, sl.rank
    out = torch.empty((W * x.shape[0],) + tuple(x.shape[1:]), dtype=x.dtype, device=x.device)
    vec = _vec_ok(nb)
    _copy(sl.st, sl.s, x, out, [(nb, -1, 0, r, 0, -1, r * nb)], vec)
    sl.barrier()
    _copy(sl.st, sl.s, x, out, [(nb, j, 0, -1, j * nb, -2, 0) for j in range(W) if j != r], vec)
    return out


def pull_blocks(sl, out, tasks):
    """Pull byte ranges (n, src_rank, src_off, dst_off) of ranks' slots into out, in
    launches of at most _MAXT table rows; 16-byte units when every range allows."""
    rows = [(n, k, so, -1, do, -2, 0) for n, k, so, do in tasks if n > 0]
    vec = all(_vec_ok(n, so, do) for n, _, so, _, do, _, _ in rows)
    for i in range(0, len(rows), _MAXT):
        _copy(sl.st, sl.s, out, out, rows[i:i + _MAXT], vec)


def moe_route(topk_idx, rows, local_experts):
    """The routing prologue of the MoE dispatch and combine experts, which must agree on it:
    their rows travel in the same (expert, token) order. Returns (token, order, counts,
    cnt_bytes, row_bytes): token, each (token, expert) pair's token, row-major over topk_idx;
    order, the pairs sorted by (expert, token), stable so that a token's pairs keep their
    order; counts, the pairs per expert over all W * local_experts experts; and the slot's
    byte layout: the int64 counts first, cnt_bytes rounded up to 256 so that the rows after
    them stay 16-byte aligned, then rows of row_bytes (one row of `rows`) each."""
    t, k = topk_idx.shape
    flat_e = topk_idx.reshape(-1)
    token = torch.arange(t, device=rows.device).repeat_interleave(k)
    order = torch.argsort(flat_e * t + token, stable=True)
    W = dist.get_world_size()
    counts = torch.bincount(flat_e, minlength=W * local_experts)
    cnt_bytes = _round_up(W * local_experts * 8, 256)
    row_bytes = rows.shape[1] * rows.element_size()
    return token, order, counts, cnt_bytes, row_bytes


def all_to_all_dims(tag, x, scatter_dim, gather_dim, pad_to=None):
    """Split x into W equal chunks along scatter_dim, chunk j to rank j, and concatenate
    what arrives along gather_dim (the Ulysses primitive). pad_to: zero-pad scatter_dim
    to this size first (zeros written straight into place, no padded copy of x).

    Push: rank r writes chunk j of x straight into region r of rank j's slot over NVLink
    and its own chunk straight into its output; one barrier; then each rank copies the
    W - 1 regions that arrived into their places in the output. The pull form (x written
    whole into the own slot, peers read their chunk) paid a local pass over all of x
    before any byte crossed NVLink: 0.84x NCCL at world size 2 on H200 (issue 43)."""
    x = x.contiguous()
    shape = list(x.shape)
    n = shape[scatter_dim]
    if pad_to is not None and pad_to != n:
        shape[scatter_dim] = pad_to
    nb = x.element_size()
    for d in shape:
        nb *= d
    sl = Slot(tag, nb, x.device)
    W, r = sl.world, sl.rank
    c = shape[scatter_dim] // W
    chunk_shape = list(shape)
    chunk_shape[scatter_dim] = c
    cb = nb // W
    out_shape = list(chunk_shape)
    g = out_shape[gather_dim]
    out_shape[gather_dim] = g * W
    out = torch.empty(out_shape, dtype=x.dtype, device=x.device)

    def put(dst, j):
        """Chunk j of x (its rows past n, padding, as zeros) into dst."""
        lo = j * c
        k = max(0, min(c, n - lo))
        if k:
            dst.narrow(scatter_dim, 0, k).copy_(x.narrow(scatter_dim, lo, k))
        if k < c:
            dst.narrow(scatter_dim, k, c - k).zero_()

    for step in range(1, W):
        j = (r + step) % W  # peers in a rotating order, so no rank's link takes every first write
        put(sl.peer(j, x.dtype, chunk_shape, offset=r * cb), j)
    put(out.narrow(gather_dim, r * g, g), r)
    sl.barrier()
    for step in range(1, W):
        j = (r + step) % W
        out.narrow(gather_dim, j * g, g).copy_(sl.local(x.dtype, chunk_shape, offset=j * cb))
    return out
