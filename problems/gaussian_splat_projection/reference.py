import torch
import torch.distributed as dist
import torch.nn.functional as F


def _covariances(quats: torch.Tensor, scales: torch.Tensor) -> torch.Tensor:
    """3-D covariance R diag(s)^2 R^T per Gaussian, R from the normalized (w, x, y, z) quaternion."""
    w, x, y, z = F.normalize(quats, dim=-1).unbind(-1)
    rot = torch.stack([
        1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y),
        2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x),
        2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y),
    ], dim=-1).view(-1, 3, 3)
    m = rot * scales.unsqueeze(1)  # scale the columns
    return m @ m.transpose(1, 2)


def _project(means, covars, viewmats, ks, width, height, eps2d, near, far):
    """Pinhole projection of N Gaussians into C cameras (gsplat's fully_fused_projection, torch
    form): radii [C, N, 2] int32 (0 where culled), means2d [C, N, 2], depths [C, N], conics [C, N, 3]."""
    rv, tv = viewmats[:, :3, :3], viewmats[:, :3, 3]
    mc = torch.einsum("cij,nj->cni", rv, means) + tv.unsqueeze(1)  # camera-space means [C, N, 3]
    cc = rv.unsqueeze(1) @ covars.unsqueeze(0) @ rv.transpose(1, 2).unsqueeze(1)  # [C, N, 3, 3]
    tx, ty, tz = mc.unbind(-1)
    fx, fy = ks[:, 0, 0, None], ks[:, 1, 1, None]
    cx, cy = ks[:, 0, 2, None], ks[:, 1, 2, None]
    tan_x, tan_y = 0.5 * width / fx, 0.5 * height / fy
    # the Jacobian is evaluated at means clamped to 1.3x the field of view
    txc = tz * torch.clamp(tx / tz, min=-(cx / fx + 0.3 * tan_x), max=(width - cx) / fx + 0.3 * tan_x)
    tyc = tz * torch.clamp(ty / tz, min=-(cy / fy + 0.3 * tan_y), max=(height - cy) / fy + 0.3 * tan_y)
    zero = torch.zeros_like(tz)
    jac = torch.stack([fx / tz, zero, -fx * txc / (tz * tz), zero, fy / tz, -fy * tyc / (tz * tz)], -1).view(*tz.shape, 2, 3)
    cov2d = jac @ cc @ jac.transpose(-1, -2) + eps2d * torch.eye(2, dtype=means.dtype, device=means.device)
    means2d = torch.einsum("cij,cnj->cni", ks[:, :2, :3], mc) / tz.unsqueeze(-1)
    det = (cov2d[..., 0, 0] * cov2d[..., 1, 1] - cov2d[..., 0, 1] * cov2d[..., 1, 0]).clamp(min=1e-10)
    conics = torch.stack([cov2d[..., 1, 1] / det, -(cov2d[..., 0, 1] + cov2d[..., 1, 0]) / 2 / det,
                          cov2d[..., 0, 0] / det], -1)
    radius = torch.ceil(3.33 * torch.sqrt(torch.stack([cov2d[..., 0, 0], cov2d[..., 1, 1]], -1)))
    radius = radius * ((tz > near) & (tz < far)).unsqueeze(-1)
    inside = ((means2d[..., 0] + radius[..., 0] > 0) & (means2d[..., 0] - radius[..., 0] < width)
              & (means2d[..., 1] + radius[..., 1] > 0) & (means2d[..., 1] - radius[..., 1] < height))
    radius = radius * inside.unsqueeze(-1)
    return radius.int(), means2d, tz, conics


def _all_gather_rows(x: torch.Tensor) -> torch.Tensor:
    parts = [torch.empty_like(x) for _ in range(dist.get_world_size())]
    dist.all_gather(parts, x.contiguous())
    return torch.cat(parts)


@torch.no_grad()
def solution(means, quats, scales, opacities, colors, viewmats, Ks, image_width: int, image_height: int,
             eps2d: float, near_plane: float, far_plane: float, camera_model: str):
    if camera_model != "pinhole":
        raise ValueError(f"camera_model {camera_model!r}: only 'pinhole' is supported")
    world, rank = dist.get_world_size(), dist.get_rank()
    n, c = means.shape[0], viewmats.shape[0]
    counts = _all_gather_rows(torch.tensor([n], device=means.device))
    offset = int(counts[:rank].sum())  # first global id of our Gaussians
    # every rank's cameras (c per rank), then project our Gaussians into all of them
    cams = _all_gather_rows(torch.cat([viewmats.reshape(c, 16), Ks.reshape(c, 9)], 1))
    radii, means2d, depths, conics = _project(means, _covariances(quats, scales), cams[:, :16].view(-1, 4, 4),
                                              cams[:, 16:].view(-1, 3, 3), image_width, image_height,
                                              eps2d, near_plane, far_plane)
    cam_ids, gauss_ids = torch.where((radii > 0).all(-1))  # row-major: grouped by camera, hence by owner
    rows = torch.cat([means2d[cam_ids, gauss_ids], depths[cam_ids, gauss_ids].unsqueeze(1),
                      conics[cam_ids, gauss_ids], opacities[gauss_ids].unsqueeze(1), colors[gauss_ids]], 1)
    ints = torch.cat([(cam_ids % c).unsqueeze(1), (gauss_ids + offset).unsqueeze(1),
                      radii[cam_ids, gauss_ids].long()], 1)  # local camera id, global Gaussian id, radii
    send = torch.bincount(cam_ids // c, minlength=world)
    recv = torch.empty_like(send)
    dist.all_to_all_single(recv, send)
    sc, rc = send.tolist(), recv.tolist()
    got = rows.new_empty((sum(rc), rows.shape[1]))
    dist.all_to_all_single(got, rows, rc, sc)
    got_ints = ints.new_empty((sum(rc), 4))
    dist.all_to_all_single(got_ints, ints, rc, sc)
    d = colors.shape[1]
    return (got_ints[:, 0].int(), got_ints[:, 1].int(), got_ints[:, 2:].int(), got[:, 0:2].contiguous(),
            got[:, 2].contiguous(), got[:, 3:6].contiguous(), got[:, 6].contiguous(), got[:, 7:7 + d].contiguous())
