import torch


def _local_loss(logits, num_experts, top_k, mask):
    x = torch.cat([t.double() for t in logits])
    p = torch.softmax(x, dim=-1)
    chosen = p.topk(top_k, dim=-1).indices  # [N, k]
    layers = x.shape[0] // mask.numel()
    m = mask.reshape(-1).double().repeat(layers)  # layer-major rows
    counts = torch.zeros(top_k, num_experts, dtype=torch.float64)
    for j in range(top_k):
        counts[j].index_add_(0, chosen[:, j], m)
    f = counts / m.sum()
    prob = (p * m[:, None]).sum(0) / m.sum()
    return num_experts * (f * prob[None, :]).sum()


def expected(inputs, world_size):
    total = sum(_local_loss(*i) for i in inputs) / world_size
    return [total.float() for _ in range(world_size)]
