import torch
import torch.distributed as dist


def _segments(seg_lengths: torch.Tensor, order: torch.Tensor) -> torch.Tensor:
    """Indices that reorder a buffer made of segments (lengths seg_lengths) into `order`."""
    starts = torch.cumsum(seg_lengths, 0) - seg_lengths
    out_len = seg_lengths[order]
    seg = torch.repeat_interleave(torch.arange(order.numel(), device=order.device), out_len)
    out_starts = torch.cumsum(out_len, 0) - out_len
    within = torch.arange(seg.numel(), device=order.device) - out_starts[seg]
    return starts[order][seg] + within


@torch.no_grad()
def solution(lengths: torch.Tensor, values: torch.Tensor, key_splits: list[int],
             batch_size: int) -> dict[str, torch.Tensor]:
    world, rank = dist.get_world_size(), dist.get_rank()
    dev = lengths.device
    num_features = sum(key_splits)
    ids_per_feature = lengths.view(num_features, batch_size).sum(1)
    owner = torch.repeat_interleave(torch.arange(world, device=dev), torch.tensor(key_splits, device=dev))
    value_splits = torch.zeros(world, dtype=torch.int64, device=dev).index_add_(0, owner, ids_per_feature)
    length_splits = torch.tensor(key_splits, device=dev) * batch_size
    meta = torch.stack([length_splits, value_splits, torch.full_like(length_splits, batch_size)], 1)
    meta_in = torch.empty_like(meta)
    dist.all_to_all_single(meta_in, meta)  # row s: what source s sends here, and its batch size
    len_in, val_in, batch_per_rank = (meta_in[:, i].tolist() for i in range(3))
    recv_lengths = lengths.new_empty(sum(len_in))
    recv_values = values.new_empty(sum(val_in))
    works = [dist.all_to_all_single(recv_lengths, lengths, len_in, length_splits.tolist(), async_op=True),
             dist.all_to_all_single(recv_values, values, val_in, value_splits.tolist(), async_op=True)]
    for work in works:
        work.wait()
    # received blocks are (source, local feature, sample); regroup as (local feature, source, sample)
    k = key_splits[rank]
    batches = torch.tensor(batch_per_rank, device=dev)
    seg_len = batches.repeat_interleave(k)  # one segment per (source, feature) in arrival order
    seg_ids = recv_lengths.new_zeros(seg_len.numel()).index_add_(
        0, torch.repeat_interleave(torch.arange(seg_len.numel(), device=dev), seg_len), recv_lengths)
    order = torch.arange(world * k, device=dev).view(world, k).T.reshape(-1)  # (feature, source)
    return {
        "lengths": recv_lengths[_segments(seg_len, order)],
        "values": recv_values[_segments(seg_ids, order)],
        "stride": batches.sum(),
        "stride_per_rank": batches,
    }
