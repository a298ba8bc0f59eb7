import torch


def expected(inputs, world_size):
    """inputs[r] = (x, psi_idx, psi_vals, weight, bias, groups, nlat_out, nlon_out)."""
    az = 2 if world_size % 2 == 0 else 1
    polar = world_size // az
    nlat_out, nlon_out = inputs[0][6], inputs[0][7]
    rows = [torch.cat([inputs[p * az + a][0] for a in range(az)], dim=3) for p in range(polar)]
    x = torch.cat(rows, dim=2).double()  # [B, C, nlat, nlon]
    b, c, nlat, nlon = x.shape
    nl = nlat // polar
    weight, bias = inputs[0][3].double(), inputs[0][4].double()
    kernel = weight.shape[2]
    pscale = nlon // nlon_out
    y = torch.zeros(b, c, kernel, nlat_out, nlon_out, dtype=torch.float64)
    po = torch.arange(nlon_out)
    for p in range(polar):  # every polar slab's filter entries (the same on its azimuth ranks)
        idx, vals = inputs[p * az][1], inputs[p * az][2]
        assert all(torch.equal(inputs[p * az + a][1], idx) for a in range(az))
        for (k, ho, col), v in zip(idx.T.tolist(), vals.tolist()):
            hi, lon = p * nl + col // nlon, col % nlon
            y[:, :, k, ho, :] += v * x[:, :, hi, (lon + po * pscale) % nlon]
    out = torch.einsum("bckxy,ock->boxy", y, weight) + bias.view(1, -1, 1, 1)
    hl, wl = nlat_out // polar, nlon_out // az
    return [out[:, :, (r // az) * hl:(r // az + 1) * hl, (r % az) * wl:(r % az + 1) * wl].float()
            for r in range(world_size)]
