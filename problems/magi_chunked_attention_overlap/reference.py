import torch
import torch.distributed as dist
import torch.nn.functional as F


def _exchange(send: torch.Tensor):
    """Start an all-to-all of equal row blocks (block j of dim 0 goes to rank j)."""
    recv = torch.empty_like(send)
    work = dist.all_to_all_single(recv, send, async_op=True)
    return recv, work


def _kv_by_heads(key_value: torch.Tensor, world: int, chunks: int, clip: int) -> torch.Tensor:
    """[chunks*spb, Hkv, 2D] token-split -> [chunks*clip, Hkv', 2D] head-split, padding dropped."""
    tokens, heads, width = key_value.shape
    if heads < world:  # fewer KV heads than ranks: each rank takes a copy of its group's head
        key_value = key_value.repeat_interleave(world // heads, dim=1)
        heads = world
    send = key_value.reshape(tokens, world, heads // world, width).transpose(0, 1).contiguous()
    recv = torch.empty_like(send)
    dist.all_to_all_single(recv, send)  # recv[i] = rank i's tokens of my heads
    spb = tokens // chunks
    per_chunk = recv.reshape(world, chunks, spb, heads // world, width).transpose(0, 1)
    per_chunk = per_chunk.reshape(chunks, world * spb, heads // world, width)[:, :clip]
    return per_chunk.reshape(chunks * clip, heads // world, width)


def _attend(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """Non-causal attention, q [Lq, Hq, D], k/v [Lk, Hk, D] with Hq a multiple of Hk."""
    group = q.shape[1] // k.shape[1]
    q, k, v = (t.transpose(0, 1).unsqueeze(0) for t in (q, k, v))
    if group > 1:
        k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
    return F.scaled_dot_product_attention(q, k, v).squeeze(0).transpose(0, 1)


@torch.no_grad()
def solution(query: torch.Tensor, key_value: torch.Tensor, k_ranges: torch.Tensor,
             cp_shuffle_num: int, clip_token_nums: int) -> torch.Tensor:
    world = dist.get_world_size()
    chunks = cp_shuffle_num
    tokens, heads, dim = query.shape
    spb = tokens // chunks
    kv = _kv_by_heads(key_value, world, chunks, clip_token_nums)
    keys, values = kv[..., :dim], kv[..., dim:]
    # per chunk, this rank's queries as [world (head owner), spb, heads/world, dim] send blocks
    q_send = [query[c * spb:(c + 1) * spb].reshape(spb, world, heads // world, dim)
              .transpose(0, 1).contiguous() for c in range(chunks)]
    bounds = k_ranges.tolist()
    arrived = []  # outputs back in token layout, [world, spb, heads/world, dim] per chunk
    inflight, carries_output = _exchange(q_send[0]), False
    previous = None
    for c in range(chunks):
        buf, work = inflight
        work.wait()
        q_local = buf[..., :dim]
        if carries_output:
            arrived.append(buf[..., dim:])
        # overlap: the next chunk's queries and the previous chunk's output travel together
        # while this chunk's attention runs
        parts = [q_send[c + 1]] if c + 1 < chunks else []
        carries_output = previous is not None
        if carries_output:
            parts.append(previous)
        inflight = _exchange(torch.cat(parts, dim=-1).contiguous()) if parts else None
        start, end = bounds[c]
        out = _attend(q_local.reshape(world * spb, heads // world, dim), keys[start:end], values[start:end])
        previous = out.reshape(world, spb, heads // world, dim)
    if inflight is not None:  # the second-to-last output, sent alone in the last round
        buf, work = inflight
        work.wait()
        arrived.append(buf)
    last, work = _exchange(previous.contiguous())
    work.wait()
    arrived.append(last)
    return torch.cat([a.transpose(0, 1).reshape(spb, heads, dim) for a in arrived])
