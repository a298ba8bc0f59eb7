import torch
import torch.distributed as dist


def solution(act: torch.Tensor, grad: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    world, rank = dist.get_world_size(), dist.get_rank()
    nxt, prev = (rank + 1) % world, (rank - 1) % world
    act_in = torch.empty_like(act)
    grad_in = torch.empty_like(grad)
    reqs = dist.batch_isend_irecv([
        dist.P2POp(dist.isend, act.contiguous(), nxt),
        dist.P2POp(dist.irecv, act_in, prev),
        dist.P2POp(dist.isend, grad.contiguous(), prev),
        dist.P2POp(dist.irecv, grad_in, nxt),
    ])
    for req in reqs:
        req.wait()
    return act_in, grad_in
