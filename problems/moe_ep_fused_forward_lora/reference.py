import torch
import torch.distributed as dist
import torch.nn.functional as F


def _sort_chunks(x: torch.Tensor, sizes: list[int], order: list[int]) -> torch.Tensor:
    chunks = torch.split(x, sizes, dim=0)
    return torch.cat([chunks[i] for i in order], dim=0)


def _lora_linear(x, w, b, a, bb):
    return F.linear(x, w, b) + F.linear(F.linear(x, a), bb)


def solution(
    hidden_states: torch.Tensor,
    gate_weight: torch.Tensor,
    gate_bias: torch.Tensor,
    w_gate: torch.Tensor,
    b_gate: torch.Tensor,
    w_up: torch.Tensor,
    b_up: torch.Tensor,
    w_down: torch.Tensor,
    b_down: torch.Tensor,
    lora_gate_A: torch.Tensor,
    lora_gate_B: torch.Tensor,
    lora_up_A: torch.Tensor,
    lora_up_B: torch.Tensor,
    lora_down_A: torch.Tensor,
    lora_down_B: torch.Tensor,
    num_experts: int,
    top_k: int,
) -> torch.Tensor:
    world = dist.get_world_size()
    rank = dist.get_rank()
    local = num_experts // world
    tokens, hidden = hidden_states.shape
    dev = hidden_states.device

    # router
    probs = torch.softmax(F.linear(hidden_states.float(), gate_weight, gate_bias), dim=-1)
    weights, experts = torch.topk(probs, top_k, dim=-1)
    routing_map = torch.zeros(num_experts, tokens, dtype=torch.bool, device=dev)
    routing_map[experts.reshape(-1), torch.arange(tokens, device=dev).repeat_interleave(top_k)] = True

    # counts: all-gather every rank's per-expert counts
    counts = routing_map.sum(dim=1)
    all_counts = torch.empty(world * num_experts, dtype=counts.dtype, device=dev)
    dist.all_gather_into_tensor(all_counts, counts)
    per_local = all_counts.reshape(world, num_experts)[:, rank * local:(rank + 1) * local]
    input_splits = counts.reshape(world, local).sum(1).tolist()
    output_splits = per_local.sum(1).tolist()

    # permute (expert-major) and dispatch
    mapping = torch.arange(tokens, device=dev).expand(num_experts, tokens).masked_select(routing_map)
    send = hidden_states.index_select(0, mapping)
    recv = send.new_empty((sum(output_splits), hidden))
    dist.all_to_all_single(recv, send, output_splits, input_splits)
    by_src = per_local.reshape(-1).tolist()  # chunks (source, local expert)
    recv = _sort_chunks(recv, by_src, [s * local + i for i in range(local) for s in range(world)])

    # local experts with LoRA, each on its contiguous rows
    outs = []
    for i, x in enumerate(torch.split(recv, per_local.sum(0).tolist(), dim=0)):
        g = _lora_linear(x, w_gate[i], b_gate[i], lora_gate_A[i], lora_gate_B[i])
        u = _lora_linear(x, w_up[i], b_up[i], lora_up_A[i], lora_up_B[i])
        outs.append(_lora_linear(F.silu(g) * u, w_down[i], b_down[i], lora_down_A[i], lora_down_B[i]))
    y = torch.cat(outs, dim=0)

    # combine: back to (source, local expert) chunks, all-to-all back, weighted scatter-add
    by_expert = per_local.t().reshape(-1).tolist()  # chunks (local expert, source)
    y = _sort_chunks(y, by_expert, [i * world + s for s in range(world) for i in range(local)])
    back = y.new_empty((sum(input_splits), hidden))
    dist.all_to_all_single(back, y, input_splits, output_splits)
    dense = torch.zeros(tokens, num_experts, dtype=weights.dtype, device=dev)
    dense.scatter_(1, experts, weights)
    row_weight = dense.t().masked_select(routing_map)
    out = torch.zeros(tokens, hidden, dtype=torch.float32, device=dev)
    out.index_add_(0, mapping, back.float() * row_weight[:, None])
    return out.to(hidden_states.dtype)
