import torch
import torch.distributed as dist


def solution(feats: torch.Tensor, edge_src: torch.Tensor, edge_dst: torch.Tensor) -> torch.Tensor:
    world = dist.get_world_size()
    full = feats.new_empty((world * feats.shape[0], feats.shape[1]))
    dist.all_gather_into_tensor(full, feats.contiguous())
    out = torch.zeros_like(feats)
    # index_put_ with accumulate sorts the edges by destination and sums each run in order on
    # CUDA (the path torch's deterministic mode gives index_add_): the same sums on every call,
    # where index_add_'s float atomics add in the order the threads arrive
    out.index_put_((edge_dst,), full[edge_src], accumulate=True)
    return out
