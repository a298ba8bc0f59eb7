import torch


def expected(inputs, world_size):
    """inputs[r] = (local_embedding_shard, input_node_ids, proj_matrix, num_total_nodes)."""
    table = torch.cat([i[0] for i in inputs]).double()
    assert table.shape[0] == inputs[0][3]
    proj = inputs[0][2].double()
    return [(table[ids] @ proj).to(shard.dtype) for shard, ids, _, _ in inputs]
