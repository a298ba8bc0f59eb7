import torch
import torch.nn.functional as F


def expected(inputs, world_size):
    e_total = inputs[0][15]
    k = inputs[0][16]
    local = e_total // world_size
    experts = {}
    for r, inp in enumerate(inputs):
        p = [t.double() for t in inp[3:15]]
        for i in range(local):
            experts[r * local + i] = [t[i] for t in p]

    def proj(x, w, b, a, bb):
        return w @ x + b + bb @ (a @ x)

    out = []
    for inp in inputs:
        x, gw, gb = inp[0].double(), inp[1].double(), inp[2].double()
        p = torch.softmax(x @ gw.t() + gb, dim=-1)
        wts, sel = p.topk(k, dim=-1)
        y = torch.zeros_like(x)
        for t in range(x.shape[0]):
            for j in range(k):
                wg, bg, wu, bu, wd, bd, ag, bgl, au, bul, ad, bdl = experts[int(sel[t, j])]
                hmid = F.silu(proj(x[t], wg, bg, ag, bgl)) * proj(x[t], wu, bu, au, bul)
                y[t] += wts[t, j] * proj(hmid, wd, bd, ad, bdl)
        out.append(y.to(inp[0].dtype))
    return out
