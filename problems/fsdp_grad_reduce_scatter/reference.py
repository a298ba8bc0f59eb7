import torch
import torch.distributed as dist


def solution(*grads: torch.Tensor) -> tuple[torch.Tensor, ...]:
    world = dist.get_world_size()
    # copy-in: row-block r of every gradient goes to segment r of one flat buffer
    flat = torch.cat([g.reshape(world, -1) for g in grads], dim=1).reshape(-1)
    shard = flat.new_empty(flat.numel() // world)
    dist.reduce_scatter_tensor(shard, flat, op=dist.ReduceOp.SUM)
    shard.div_(world)
    out, offset = [], 0
    for g in grads:
        n = g.numel() // world
        out.append(shard[offset:offset + n].view(g.shape[0] // world, *g.shape[1:]))
        offset += n
    return tuple(out)
