import math

import torch

# A Gaussian whose culling or radius would flip under a float32 rounding difference is redrawn:
# every ceil() argument stays RADIUS_MARGIN (plus RELATIVE_MARGIN of itself: Gaussians just past
# the near plane project to radii of 1e4+ pixels) from an integer, every screen-bound test
# PIXEL_MARGIN (plus the relative part) from its threshold, every depth DEPTH_MARGIN from the
# near plane. fp32 errors are ~1e-6 relative.
RADIUS_MARGIN = 1e-3
PIXEL_MARGIN = 0.05
RELATIVE_MARGIN = 3e-5
DEPTH_MARGIN = 1e-3
EPS2D, NEAR, FAR = 0.3, 0.01, 1e10


def _num_gaussians(rank, size):
    n = size["gaussians"]
    return n - (rank % 2) * (n // 8)  # uneven: the global ids need each rank's count


def _cameras(rank, seed, size, device):
    """viewmats [C, 4, 4] and Ks [C, 3, 3] of rank `rank`: small random rotations and shifts
    around a camera at the origin looking down +z (every rank can redraw every rank's)."""
    g = torch.Generator().manual_seed(seed * 1_000_003 + 500_009 + 7919 * rank)
    c, w, h = size["cameras"], size["width"], size["height"]
    axis = torch.nn.functional.normalize(torch.randn(c, 3, generator=g, dtype=torch.float64), dim=-1)
    angle = 0.25 * torch.rand(c, 1, generator=g, dtype=torch.float64)
    kx = torch.zeros(c, 3, 3, dtype=torch.float64)
    kx[:, 0, 1], kx[:, 0, 2], kx[:, 1, 2] = -axis[:, 2], axis[:, 1], -axis[:, 0]
    kx = kx - kx.transpose(1, 2)
    rot = torch.eye(3, dtype=torch.float64) + torch.sin(angle)[..., None] * kx + (1 - torch.cos(angle))[..., None] * kx @ kx
    view = torch.eye(4, dtype=torch.float64).repeat(c, 1, 1)
    view[:, :3, :3] = rot
    view[:, :3, 3] = 0.3 * (2 * torch.rand(c, 3, generator=g, dtype=torch.float64) - 1)
    focal = 0.8 * min(w, h) * (0.9 + 0.2 * torch.rand(c, generator=g, dtype=torch.float64))
    ks = torch.zeros(c, 3, 3, dtype=torch.float64)
    ks[:, 0, 0], ks[:, 1, 1], ks[:, 0, 2], ks[:, 1, 2], ks[:, 2, 2] = focal, focal, w / 2, h / 2, 1.0
    return view.float().to(device), ks.float().to(device)


def _clear(means, quats, scales, view, ks, w, h):
    """True for Gaussians whose culling and radii are far from every threshold in this camera
    (fp64 evaluation of the projection the description specifies)."""
    q = torch.nn.functional.normalize(quats, dim=-1)
    qw, qx, qy, qz = q.unbind(-1)
    rot = torch.stack([1 - 2 * (qy * qy + qz * qz), 2 * (qx * qy - qw * qz), 2 * (qx * qz + qw * qy),
                       2 * (qx * qy + qw * qz), 1 - 2 * (qx * qx + qz * qz), 2 * (qy * qz - qw * qx),
                       2 * (qx * qz - qw * qy), 2 * (qy * qz + qw * qx), 1 - 2 * (qx * qx + qy * qy)], -1).view(-1, 3, 3)
    m = rot * scales.unsqueeze(1)
    cov = m @ m.transpose(1, 2)
    rv, tv = view[:3, :3], view[:3, 3]
    mc = means @ rv.T + tv
    cc = rv @ cov @ rv.T
    tx, ty, tz = mc.unbind(-1)
    fx, fy, cx, cy = ks[0, 0], ks[1, 1], ks[0, 2], ks[1, 2]
    txc = tz * torch.clamp(tx / tz, -(cx / fx + 0.15 * w / fx), (w - cx) / fx + 0.15 * w / fx)
    tyc = tz * torch.clamp(ty / tz, -(cy / fy + 0.15 * h / fy), (h - cy) / fy + 0.15 * h / fy)
    zero = torch.zeros_like(tz)
    jac = torch.stack([fx / tz, zero, -fx * txc / tz ** 2, zero, fy / tz, -fy * tyc / tz ** 2], -1).view(-1, 2, 3)
    cov2d = jac @ cc @ jac.transpose(1, 2)
    arg = 3.33 * torch.sqrt(torch.stack([cov2d[:, 0, 0], cov2d[:, 1, 1]], -1) + EPS2D)
    to_int = torch.minimum(arg - torch.floor(arg), torch.ceil(arg) - arg)
    ok = (to_int > RADIUS_MARGIN + RELATIVE_MARGIN * arg).all(-1)
    radius = torch.ceil(arg)
    px = fx * tx / tz + cx
    py = fy * ty / tz + cy
    for edge, scale in ((px + radius[:, 0], px.abs() + radius[:, 0]), (px - radius[:, 0] - w, px.abs() + radius[:, 0]),
                        (py + radius[:, 1], py.abs() + radius[:, 1]), (py - radius[:, 1] - h, py.abs() + radius[:, 1])):
        ok &= edge.abs() > PIXEL_MARGIN + RELATIVE_MARGIN * scale
    return ok & ((tz - NEAR).abs() > DEPTH_MARGIN)


def _draw(g, n, device):
    means = torch.empty(n, 3, device=device)
    # a scene wider than the views and partly behind the cameras, so culling has work to do
    means[:, :2] = 4.0 * torch.rand(n, 2, generator=g, device=device) - 2.0
    means[:, 2] = -0.5 + 5.0 * torch.rand(n, generator=g, device=device)
    quats = torch.randn(n, 4, generator=g, device=device)
    scales = 0.002 + 0.028 * torch.rand(n, 3, generator=g, device=device)
    return means, quats, scales


def make_inputs(rank, world_size, seed, size, device="cpu"):
    n = _num_gaussians(rank, size)
    g = torch.Generator(device=device).manual_seed(seed * 1_000_003 + rank)
    means, quats, scales = _draw(g, n, device)
    cams = [_cameras(r, seed, size, device) for r in range(world_size)]
    for _ in range(50):
        bad = torch.zeros(n, dtype=torch.bool, device=device)
        for views, ks in cams:
            for view, k in zip(views.double(), ks.double()):
                bad |= ~_clear(means.double(), quats.double(), scales.double(), view, k, size["width"], size["height"])
        if not bool(bad.any()):
            break
        means[bad], quats[bad], scales[bad] = _draw(g, int(bad.sum()), device)
    else:
        raise RuntimeError("could not draw Gaussians clear of every culling threshold")
    opacities = 0.1 + 0.8 * torch.rand(n, generator=g, device=device)
    colors = torch.rand(n, size["channels"], generator=g, device=device)
    views, ks = cams[rank]
    return (means, quats, scales, opacities, colors, views, ks, size["width"], size["height"],
            EPS2D, NEAR, FAR, "pinhole")


def roofline(world_size, size):
    n_min = size["gaussians"] - size["gaussians"] // 8
    c = size["cameras"]
    # at least a tenth of a rank's Gaussians land in each other rank's cameras (about half do
    # at these scene sizes); each such pair carries at least its 2-D mean, depth, conic,
    # opacity and colour (fp32) to the camera's owner
    pair_bytes = (2 + 1 + 3 + 1 + size["channels"]) * 4
    return {
        "nvlink_bytes_per_rank": 0.1 * n_min * c * (world_size - 1) * pair_bytes,
        # the covariance per Gaussian and the projection per (camera, Gaussian) pair, ~50 flops each
        "flops_per_rank": 50.0 * n_min * (1 + c * world_size),
        # read the Gaussians once
        "hbm_bytes_per_rank": n_min * (3 + 4 + 3 + 1 + size["channels"]) * 4,
    }
