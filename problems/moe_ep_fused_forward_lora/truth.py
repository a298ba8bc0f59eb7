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

    def proj(x, w, b, a, bb):  # rows of x
        return x @ w.t() + b + (x @ a.t()) @ bb.t()

    out = []
    for inp in inputs:
        x, gw, gb = inp[0].double(), inp[1].double(), inp[2].double()
        p = torch.softmax(x @ gw.t() + gb, dim=-1)
        wts, sel = p.topk(k, dim=-1)
        y = torch.zeros_like(x)
        # expert by expert over the tokens that chose it (float64: the order of the k sums is
        # immaterial); token by token is 4096 x 6 GEMVs per rank, past the audit's truth time
        for e, (wg, bg, wu, bu, wd, bd, ag, bgl, au, bul, ad, bdl) in experts.items():
            tok, slot = (sel == e).nonzero(as_tuple=True)
            if tok.numel():
                xe = x[tok]
                hmid = F.silu(proj(xe, wg, bg, ag, bgl)) * proj(xe, wu, bu, au, bul)
                y.index_add_(0, tok, wts[tok, slot].unsqueeze(1) * proj(hmid, wd, bd, ad, bdl))
        out.append(y.to(inp[0].dtype))
    return out
