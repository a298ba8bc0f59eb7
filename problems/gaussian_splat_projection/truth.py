import math

import torch


def _pairs(means, quats, scales, view, ks, w, h, eps2d, near, far):
    """fp64 projection of every Gaussian into one camera: (visible, radii, means2d, depth, conic)."""
    q = quats / quats.norm(dim=-1, keepdim=True)
    a, b, c, d = q.unbind(-1)
    rot = torch.stack([
        torch.stack([a * a + b * b - c * c - d * d, 2 * (b * c - a * d), 2 * (b * d + a * c)], -1),
        torch.stack([2 * (b * c + a * d), a * a - b * b + c * c - d * d, 2 * (c * d - a * b)], -1),
        torch.stack([2 * (b * d - a * c), 2 * (c * d + a * b), a * a - b * b - c * c + d * d], -1)], -2)
    cov = rot @ torch.diag_embed(scales ** 2) @ rot.transpose(1, 2)
    mc = means @ view[:3, :3].T + view[:3, 3]
    cc = view[:3, :3] @ cov @ view[:3, :3].T
    x, y, z = mc.unbind(-1)
    fx, fy, cx, cy = ks[0, 0], ks[1, 1], ks[0, 2], ks[1, 2]
    limx = (-(cx + 0.15 * w) / fx, (w - cx + 0.15 * w) / fx)
    limy = (-(cy + 0.15 * h) / fy, (h - cy + 0.15 * h) / fy)
    xc, yc = z * (x / z).clamp(*limx), z * (y / z).clamp(*limy)
    jac = torch.zeros(len(z), 2, 3, dtype=torch.float64)
    jac[:, 0, 0], jac[:, 0, 2] = fx / z, -fx * xc / z ** 2
    jac[:, 1, 1], jac[:, 1, 2] = fy / z, -fy * yc / z ** 2
    cov2d = jac @ cc @ jac.transpose(1, 2) + eps2d * torch.eye(2, dtype=torch.float64)
    det = (cov2d[:, 0, 0] * cov2d[:, 1, 1] - cov2d[:, 0, 1] * cov2d[:, 1, 0]).clamp(min=1e-10)
    conic = torch.stack([cov2d[:, 1, 1], -(cov2d[:, 0, 1] + cov2d[:, 1, 0]) / 2, cov2d[:, 0, 0]], -1) / det[:, None]
    m2d = torch.stack([fx * x / z + cx, fy * y / z + cy], -1)
    radii = torch.ceil(3.33 * torch.sqrt(torch.stack([cov2d[:, 0, 0], cov2d[:, 1, 1]], -1)))
    visible = ((z > near) & (z < far) & (m2d[:, 0] + radii[:, 0] > 0) & (m2d[:, 0] - radii[:, 0] < w)
               & (m2d[:, 1] + radii[:, 1] > 0) & (m2d[:, 1] - radii[:, 1] < h))
    return visible, radii, m2d, z, conic


def expected(inputs, world_size):
    """inputs[r] = (means, quats, scales, opacities, colors, viewmats, Ks, width, height,
    eps2d, near_plane, far_plane, camera_model)."""
    w, h, eps2d, near, far = inputs[0][7:12]
    offsets = [sum(i[0].shape[0] for i in inputs[:r]) for r in range(world_size)]
    outs = []
    for dst in range(world_size):
        views, ks = inputs[dst][5].double(), inputs[dst][6].double()
        parts = []
        for src, (means, quats, scales, opac, colors, *_) in enumerate(inputs):
            for cam in range(views.shape[0]):
                vis, radii, m2d, z, conic = _pairs(means.double(), quats.double(), scales.double(),
                                                   views[cam], ks[cam], w, h, eps2d, near, far)
                g = vis.nonzero().squeeze(1)
                parts.append((torch.full_like(g, cam), g + offsets[src], radii[g], m2d[g], z[g], conic[g],
                              opac[g].double(), colors[g].double()))
        cols = list(zip(*parts))
        cat = [torch.cat(c) for c in cols]
        outs.append((cat[0].int(), cat[1].int(), cat[2].int(), cat[3].float(), cat[4].float(),
                     cat[5].float(), cat[6].float(), cat[7].float()))
    return outs
