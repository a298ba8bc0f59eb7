import torch


def expected(inputs, world_size):
    """inputs[r] = (grad_output, seed_inverse_ids, seed_size, counts_sent, counts_received)."""
    outs = []
    for r in range(world_size):
        _, ids, seed_size, _, received = inputs[r]
        out = torch.zeros(seed_size, inputs[r][0].shape[1], dtype=torch.float64)
        k = 0
        for i in range(world_size):
            p = (r + i) % world_size
            grad_p, sent_p = inputs[p][0], inputs[p][3]
            j = (-i) % world_size
            rows = grad_p[sum(sent_p[:j]):sum(sent_p[:j]) + sent_p[j]]
            assert rows.shape[0] == received[i]
            for row in rows:
                out[ids[k]] += row.double()
                k += 1
        outs.append(out.float())
    return outs
