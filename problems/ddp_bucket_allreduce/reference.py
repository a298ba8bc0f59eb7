import torch
import torch.distributed as dist

BUCKET_CAP_BYTES = 25 * 1024 * 1024  # DDP default bucket_cap_mb=25


def solution(*grads: torch.Tensor) -> tuple[torch.Tensor, ...]:
    world = dist.get_world_size()
    out = [None] * len(grads)
    # DDP fills buckets in reverse parameter order (the order backward produces gradients)
    bucket: list[int] = []
    size = 0
    buckets = []
    for i in reversed(range(len(grads))):
        bucket.append(i)
        size += grads[i].numel() * grads[i].element_size()
        if size >= BUCKET_CAP_BYTES:
            buckets.append(bucket)
            bucket, size = [], 0
    if bucket:
        buckets.append(bucket)
    for bucket in buckets:
        flat = torch.cat([grads[i].reshape(-1) for i in bucket])
        dist.all_reduce(flat, op=dist.ReduceOp.SUM)
        flat.div_(world)
        offset = 0
        for i in bucket:
            n = grads[i].numel()
            out[i] = flat[offset:offset + n].view_as(grads[i])
            offset += n
    return tuple(out)
