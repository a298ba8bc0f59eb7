# pkb:include ../_shared/ring_attention/reference.py


@torch.no_grad()
def solution(hidden_states: torch.Tensor, w_qkv: torch.Tensor, w_o: torch.Tensor, num_heads: int,
             tp_size: int, softmax_scale: float, causal: bool) -> torch.Tensor:
    tp_group, cp_group = _grid_groups(tp_size)
    heads = num_heads // tp_size
    b, s, _ = hidden_states.shape
    head_dim = w_qkv.shape[0] // (3 * heads)
    qkv = (hidden_states @ w_qkv.T).view(b, s, 3, heads, head_dim)
    ctx = _ring_attention(qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2], softmax_scale, causal, cp_group)
    # partial sum over this rank's heads, kept in fp32 through the TP sum: rounding the partials
    # to bf16 first loses up to an ulp of the partial wherever the two partials cancel
    out = ctx.reshape(b, s, heads * head_dim).float() @ w_o.float().T
    dist.all_reduce(out, group=tp_group)
    return out.to(hidden_states.dtype)
