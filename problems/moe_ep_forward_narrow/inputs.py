# pkb:include ../_shared/moe_ep_forward/inputs.py


def _num_experts(world_size):
    return world_size // 2  # one expert per rank, world_size // 2 experts
