import torch
import torch.distributed as dist
import torch.nn.functional as F


def _seq_to_heads(x: torch.Tensor, world: int) -> torch.Tensor:
    """[B, S/w, H, D] (this rank's positions) -> [B, S, H/w, D] (all positions, this rank's heads)."""
    b, s, h, d = x.shape
    send = x.reshape(b, s, world, h // world, d).permute(2, 0, 1, 3, 4).contiguous()
    recv = torch.empty_like(send)
    dist.all_to_all_single(recv, send)  # recv[i] = rank i's positions
    return recv.permute(1, 0, 2, 3, 4).reshape(b, world * s, h // world, d)


def _heads_to_seq(x: torch.Tensor, world: int) -> torch.Tensor:
    """[B, S, H/w, D] -> [B, S/w, H, D]."""
    b, s, hl, d = x.shape
    send = x.reshape(b, world, s // world, hl, d).transpose(0, 1).contiguous()
    recv = torch.empty_like(send)
    dist.all_to_all_single(recv, send)  # recv[i] = my positions of rank i's heads
    return recv.permute(1, 2, 0, 3, 4).reshape(b, s // world, world * hl, d)


def _gated_delta_rule(q, k, v, gate, beta, a_log, dt_bias):
    """Sequential gated delta rule in fp32. q, k [B, S, H, K]; v [B, S, H, V]; gate, beta [B, S, H]."""
    b, s, h, dk = q.shape
    dv = v.shape[-1]
    q = F.normalize(q.float(), dim=-1, eps=1e-6) * dk ** -0.5
    k = F.normalize(k.float(), dim=-1, eps=1e-6)
    decay = torch.exp(-a_log.float().exp() * F.softplus(gate.float() + dt_bias.float()))
    # fold batch and heads: [BH, S, ...]
    q, k, v = (t.permute(0, 2, 1, 3).reshape(b * h, s, -1) for t in (q, k, v.float()))
    decay, beta = (t.permute(0, 2, 1).reshape(b * h, s) for t in (decay, beta.float()))
    state = q.new_zeros(b * h, dk, dv)
    out = q.new_empty(b * h, s, dv)
    for t in range(s):
        state = state * decay[:, t, None, None]
        kt = k[:, t]
        predicted = torch.bmm(kt.unsqueeze(1), state).squeeze(1)
        delta = (v[:, t] - predicted) * beta[:, t, None]
        state = state + kt.unsqueeze(2) * delta.unsqueeze(1)
        out[:, t] = torch.bmm(q[:, t].unsqueeze(1), state).squeeze(1)
    return out.reshape(b, h, s, dv).transpose(1, 2)


@torch.no_grad()
def solution(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, gate: torch.Tensor,
             beta: torch.Tensor, a_log: torch.Tensor, dt_bias: torch.Tensor) -> torch.Tensor:
    world = dist.get_world_size()
    qh, kh, vh = (_seq_to_heads(t, world) for t in (q, k, v))
    gh, bh = (_seq_to_heads(t.unsqueeze(-1), world).squeeze(-1) for t in (gate, beta))
    out = _gated_delta_rule(qh, kh, vh, gh, bh, a_log, dt_bias)
    return _heads_to_seq(out.to(q.dtype), world)
