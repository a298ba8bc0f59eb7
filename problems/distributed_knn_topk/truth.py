import torch


def expected(inputs, world_size):
    k = inputs[0][3]
    train = torch.cat([i[1] for i in inputs], dim=1).double()  # [D, N] in global index order
    labels = torch.cat([i[2] for i in inputs], dim=1)[0]
    out = []
    for test, *_ in inputs:
        sims = test.double() @ train
        # descending similarity, ties to the smaller global index
        idx = torch.sort(-sims, dim=1, stable=True).indices[:, :k]
        out.append((sims.gather(1, idx).float(), labels[idx]))
    return out
