import torch
import torch.nn.functional as F


def expected(inputs, world_size):
    """inputs[r] = (hidden_states, gate_weight, gate_bias, w_gate, w_up, w_down, num_experts, top_k)."""
    num_experts, top_k = inputs[0][6], inputs[0][7]
    ep_size = min(world_size, num_experts)
    local = num_experts // ep_size
    experts = {}
    for r, inp in enumerate(inputs):
        for i in range(local):
            e = (r % ep_size) * local + i
            ws = tuple(w[i].double() for w in inp[3:6])
            if e in experts:  # replicas of an expert must agree
                assert all(torch.equal(a, b) for a, b in zip(experts[e], ws)), f"expert {e} differs between ranks"
            experts[e] = ws
    outs = []
    for x, gw, gb, *_ in inputs:
        xd = x.double()
        probs = torch.softmax(xd @ gw.double().T + gb.double(), dim=-1)
        weights, chosen = torch.topk(probs, top_k, dim=-1)
        out = torch.zeros_like(xd)
        for e, (wg, wu, wd) in experts.items():
            y = (F.silu(xd @ wg.T) * (xd @ wu.T)) @ wd.T
            gate = (weights * (chosen == e)).sum(dim=-1, keepdim=True)
            out += gate * y
        outs.append(out.to(x.dtype))
    return outs
