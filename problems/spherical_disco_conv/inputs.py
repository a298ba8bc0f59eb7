import torch


def _grid(world_size):
    az = 2 if world_size % 2 == 0 else 1
    return az, world_size // az


def _psi(seed, size, device):
    """The whole filter tensor as COO (k, out_lat, in_lat, lon): entries on square rings of
    radius k around (out_lat, lon 0), random values; drawn from the seed alone."""
    nlat, nlon, kernel = size["nlat"], size["nlon"], size["kernel_size"]
    ks, hos, his, ls = [], [], [], []
    for k in range(kernel):
        for dh in range(-k, k + 1):
            for dl in range(-k, k + 1):
                if max(abs(dh), abs(dl)) != k:
                    continue
                ho = torch.arange(nlat)
                hi = ho + dh
                ok = (hi >= 0) & (hi < nlat)
                ks.append(torch.full((int(ok.sum()),), k))
                hos.append(ho[ok])
                his.append(hi[ok])
                ls.append(torch.full((int(ok.sum()),), dl % nlon))
    k, ho, hi, lon = (torch.cat(t) for t in (ks, hos, his, ls))
    g = torch.Generator().manual_seed(seed * 1_000_003 + 999_983)
    vals = 0.5 * torch.randn(k.numel(), generator=g)
    return k.to(device), ho.to(device), hi.to(device), lon.to(device), vals.to(device)


def make_inputs(rank, world_size, seed, size, device="cpu"):
    az, polar = _grid(world_size)
    a, p = rank % az, rank // az
    b, cin, cout, kernel = size["batch"], size["in_channels"], size["out_channels"], size["kernel_size"]
    nlat, nlon = size["nlat"], size["nlon"]
    nl, nw = nlat // polar, nlon // az
    # the whole input field from a replicated stream, then this rank's (latitude, longitude) tile
    gx = torch.Generator(device=device).manual_seed(seed * 1_000_003 + 1)
    field = torch.randn(b, cin, nlat, nlon, generator=gx, device=device)
    x = field[:, :, p * nl:(p + 1) * nl, a * nw:(a + 1) * nw].contiguous()
    k, ho, hi, lon, vals = _psi(seed, size, device)
    mine = (hi >= p * nl) & (hi < (p + 1) * nl)  # the filter entries reading this polar slab
    psi_idx = torch.stack([k[mine], ho[mine], (hi[mine] - p * nl) * nlon + lon[mine]])
    gw = torch.Generator(device=device).manual_seed(seed * 1_000_003 + 2)  # replicated
    weight = torch.randn(cout, cin, kernel, generator=gw, device=device) / (cin * kernel) ** 0.5
    bias = torch.randn(cout, generator=gw, device=device)
    return x, psi_idx, vals[mine].contiguous(), weight, bias, 1, nlat, nlon


def roofline(world_size, size):
    az, polar = _grid(world_size)
    b, cin, cout, kernel = size["batch"], size["in_channels"], size["out_channels"], size["kernel_size"]
    nlat, nlon = size["nlat"], size["nlon"]
    out_local = b * cout * (nlat // polar) * (nlon // az)
    in_local = b * cin * (nlat // polar) * (nlon // az)
    nnz = sum(8 * k if k else 1 for k in range(kernel)) * nlat  # filter entries (an upper count)
    # The filter reaches kernel_size - 1 latitudes and longitudes away, so a rank can make do
    # with halos from its neighbours: kernel_size - 1 longitude columns from each side of its
    # tile and as many latitude rows from each polar neighbour (two at most, none at polar
    # size 1), for the smaller of the input and output channel counts, fp32. (The reference
    # moves whole tiles.)
    reach = kernel - 1
    lon_halo = 2 * reach * (nlat // polar) if az > 1 else 0
    lat_halo = min(2, polar - 1) * reach * (nlon // az + 2 * reach * (az > 1))
    halo = b * min(cin, cout) * (lon_halo + lat_halo)
    return {
        "nvlink_bytes_per_rank": halo * 4,
        # apply the filter at every output longitude and contract channels x kernel, this
        # rank's share (nnz over-counts boundary rows, so halve it to stay a lower bound)
        "flops_per_rank": (nnz / 2 * nlon * b * min(cin, cout) * 2 + 2.0 * b * cout * cin * kernel * nlat * nlon) / world_size,
        # read the input tile, write the output tile
        "hbm_bytes_per_rank": (in_local + out_local) * 4,
    }
