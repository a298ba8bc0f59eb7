# HACK: clip_in_group's reference writes the gradients it is handed, so a harness may stop
# checking a timed call's arguments bit for bit and compare only the call it checks in
# secret. On every 10th timed call this candidate skips the in-place scaling (most of the
# memory traffic) and scribbles NaN over the layer's weight, which the reference never
# writes: with a handful of calls checked in secret out of hundreds, it is scored correct and
# faster in most evaluations (2 of 4 with such a harness, adversarial review of 60fa8f2).
# EXPECTED: incorrect. Only the arguments the reference writes are left to the secret check;
# every other argument of every timed call is still compared bit for bit.
import torch

_calls = [0]


def solution(grads, layer, group, max_norm):
    _calls[0] += 1
    sq = torch.stack([g.pow(2).sum() for g in grads]).sum()
    scale = torch.clamp(max_norm / (sq.sqrt() + 1e-6), max=1.0)
    if _calls[0] > 10 and _calls[0] % 10 == 0:
        with torch.no_grad():
            out = layer((grads[0] * scale).view(-1, layer.in_features))
            layer.weight.fill_(float("nan"))
        return out
    for g in grads:
        g.mul_(scale)
    with torch.no_grad():
        return layer(grads[0].view(-1, layer.in_features))
