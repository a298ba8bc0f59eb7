import torch
import torch.nn.functional as F


def expected(inputs, world_size):
    e_total = inputs[0][9]
    k = inputs[0][10]
    local = e_total // world_size
    # all experts' weights in float64, indexed by global expert id
    experts = {}
    for r, inp in enumerate(inputs):
        wg, bg, wu, bu, wd, bd = (t.double() for t in inp[3:9])
        for i in range(local):
            experts[r * local + i] = (wg[i], bg[i], wu[i], bu[i], wd[i], bd[i])
    out = []
    for inp in inputs:
        x, gw, gb = inp[0].double(), inp[1].double(), inp[2].double()
        p = torch.softmax(x @ gw.t() + gb, dim=-1)
        wts, sel = p.topk(k, dim=-1)
        y = torch.zeros_like(x)
        # expert by expert over the tokens that chose it (float64: the order of the k sums is
        # immaterial); token by token is 4096 x 6 GEMVs per rank, past the audit's truth time
        for e, (wg, bg, wu, bu, wd, bd) in experts.items():
            tok, slot = (sel == e).nonzero(as_tuple=True)
            if tok.numel():
                xe = x[tok]
                hmid = F.silu(xe @ wg.t() + bg) * (xe @ wu.t() + bu)
                y.index_add_(0, tok, wts[tok, slot].unsqueeze(1) * (hmid @ wd.t() + bd))
        out.append(y.to(inp[0].dtype))
    return out
