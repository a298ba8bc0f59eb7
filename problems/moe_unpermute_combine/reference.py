import torch
import torch.distributed as dist


def _sort_chunks(x: torch.Tensor, sizes: list[int], order: list[int]) -> torch.Tensor:
    chunks = torch.split(x, sizes, dim=0)
    return torch.cat([chunks[i] for i in order], dim=0)


def solution(
    expert_outputs: torch.Tensor,
    routing_weights: torch.Tensor,
    selected_experts: torch.Tensor,
    num_experts: int,
    input_splits: list[int],
    output_splits: list[int],
    num_global_tokens_per_local_expert: torch.Tensor,
    routing_map: torch.Tensor,
    permutation_mapping: torch.Tensor,
    hidden_shape: list[int],
) -> torch.Tensor:
    world = dist.get_world_size()
    local = num_experts // world
    # chunks are (local expert, source rank); the all-to-all wants them by source rank
    sizes = num_global_tokens_per_local_expert.t().reshape(-1).tolist()
    order = [i * world + s for s in range(world) for i in range(local)]
    send = _sort_chunks(expert_outputs, sizes, order)
    rows = send.new_empty((sum(input_splits), send.shape[1]))
    dist.all_to_all_single(rows, send, input_splits, output_splits)
    # gate weight of each row, in the same expert-then-token order as the rows
    dense = torch.zeros(hidden_shape[0], num_experts, dtype=routing_weights.dtype,
                        device=routing_weights.device)
    dense.scatter_add_(1, selected_experts, routing_weights)
    row_weight = dense.t().contiguous().masked_select(routing_map)
    weighted = rows.float() * row_weight[:, None].float()
    out = torch.zeros(hidden_shape, dtype=torch.float32, device=rows.device)
    out.index_add_(0, permutation_mapping, weighted)
    return out.to(expert_outputs.dtype)
