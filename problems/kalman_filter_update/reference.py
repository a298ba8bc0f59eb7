import torch
import torch.distributed as dist


@torch.no_grad()
def solution(H: list[torch.Tensor], error: torch.Tensor, weights: list[torch.Tensor], P: list[torch.Tensor],
             kalman_lambda: float, kalman_nue: float):
    world = dist.get_world_size()
    dev, f64 = weights[0].device, weights[0].dtype
    lam = torch.tensor(kalman_lambda, dtype=f64, device=dev)
    tmp = torch.zeros(1, 1, dtype=f64, device=dev)
    for h, p in zip(H, P):
        tmp = tmp + (lam + h.T @ p @ h)
    dist.all_reduce(tmp)
    a = 1.0 / tmp
    new_w, new_p = [], []
    for h, w, p in zip(H, weights, P):
        k = p @ h
        new_w.append(w + a * error * k)
        new_p.append((p - a * (k @ k.T)) / lam)
    # every rank's block sizes, then the flattened weights (padded to the longest rank)
    sizes = torch.tensor([w.shape[0] for w in new_w], device=dev)
    all_sizes = torch.empty(world * sizes.numel(), dtype=sizes.dtype, device=dev)
    dist.all_gather_into_tensor(all_sizes, sizes)
    all_sizes = all_sizes.view(world, -1)
    totals = all_sizes.sum(1).tolist()
    flat = torch.zeros(max(totals), dtype=f64, device=dev)
    flat[:totals[dist.get_rank()]] = torch.cat([w.reshape(-1) for w in new_w])
    gathered = torch.empty(world * flat.numel(), dtype=f64, device=dev)
    dist.all_gather_into_tensor(gathered, flat)
    gathered = gathered.view(world, -1)
    all_w = []
    for r in range(world):
        all_w += [t.reshape(-1, 1) for t in gathered[r, :totals[r]].split(all_sizes[r].tolist())]
    lam_next = kalman_nue * lam + 1 - kalman_nue
    return all_w, new_p, lam_next
