import torch


def expected(inputs, world_size):
    _, _, k_ranges, chunks, clip = inputs[0]
    hq, d = inputs[0][0].shape[1:]
    spb = inputs[0][0].shape[0] // chunks
    # the chunk-major global sequences: chunk c = rank 0's spb tokens, rank 1's, ...
    q = [torch.cat([i[0][c * spb:(c + 1) * spb] for i in inputs]).double() for c in range(chunks)]
    kv = torch.cat([torch.cat([i[1][c * spb:(c + 1) * spb] for i in inputs])[:clip] for c in range(chunks)]).double()
    hkv = kv.shape[1]
    k = kv[..., :d].repeat_interleave(hq // hkv, dim=1)
    v = kv[..., d:].repeat_interleave(hq // hkv, dim=1)
    outs = []
    for c in range(chunks):
        s, e = k_ranges[c].tolist()
        logits = torch.einsum("qhd,khd->hqk", q[c], k[s:e]) / d ** 0.5
        outs.append(torch.einsum("hqk,khd->qhd", logits.softmax(-1), v[s:e]))
    dt = inputs[0][0].dtype
    return [torch.cat([o[r * spb:(r + 1) * spb] for o in outs]).to(dt) for r in range(world_size)]
