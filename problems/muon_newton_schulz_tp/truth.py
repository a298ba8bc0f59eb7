import torch


def expected(inputs, world_size):
    x0, coefs, steps, pdim = inputs[0]
    shards = [i[0].double() for i in inputs]
    x = torch.cat(shards, dim=pdim)
    work = x.t() if pdim == 0 else x
    work = work / work.norm()
    for s in range(steps):
        a, b, c = coefs[s % len(coefs)]
        g = work @ work.t()
        work = a * work + (b * g + c * g @ g) @ work
    out = work.t() if pdim == 0 else work
    return [part.to(x0.dtype) for part in torch.split(out, shards[0].shape[pdim], dim=pdim)]
