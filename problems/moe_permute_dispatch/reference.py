import torch
import torch.distributed as dist


def _sort_chunks(x: torch.Tensor, sizes: list[int], order: list[int]) -> torch.Tensor:
    chunks = torch.split(x, sizes, dim=0)
    return torch.cat([chunks[i] for i in order], dim=0)


def solution(
    hidden_states: torch.Tensor,
    expert_mask: torch.Tensor,
    num_experts: int,
    input_splits: list[int],
    output_splits: list[int],
    num_global_tokens_per_local_expert: torch.Tensor,
):
    world = dist.get_world_size()
    local = num_experts // world
    tokens = hidden_states.shape[0]
    routing_map = expert_mask.sum(dim=1) > 0  # [E, tokens]
    # permute: one row per routed (expert, token) pair, expert-major
    token_ids = torch.arange(tokens, device=hidden_states.device).expand(num_experts, tokens)
    mapping = token_ids.masked_select(routing_map)
    permuted = hidden_states.index_select(0, mapping)
    if permuted.shape[0] != sum(input_splits):
        raise RuntimeError(f"input_splits sum {sum(input_splits)} != routed rows {permuted.shape[0]}")
    received = permuted.new_empty((sum(output_splits), hidden_states.shape[1]))
    dist.all_to_all_single(received, permuted, output_splits, input_splits)
    # received chunks are (source rank, local expert); reorder to (local expert, source rank)
    sizes = num_global_tokens_per_local_expert.reshape(-1).tolist()
    order = [s * local + i for i in range(local) for s in range(world)]
    return _sort_chunks(received, sizes, order), routing_map, mapping
