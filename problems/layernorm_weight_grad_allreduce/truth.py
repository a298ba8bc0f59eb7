import torch


def expected(inputs, world_size):
    x_hat = torch.cat([x for x, _ in inputs]).double()
    dy = torch.cat([d for _, d in inputs]).double()
    dgamma, dbeta = (dy * x_hat).sum(0).float(), dy.sum(0).float()
    return [(dgamma.clone(), dbeta.clone()) for _ in range(world_size)]
