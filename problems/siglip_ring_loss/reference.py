import torch
import torch.distributed as dist
import torch.nn.functional as F


def _block_loss(img: torch.Tensor, txt: torch.Tensor, scale: float, bias: float, positives: bool) -> torch.Tensor:
    logits = scale * (img @ txt.T) + bias
    labels = -torch.ones_like(logits)
    if positives:
        labels.diagonal().fill_(1.0)
    return -F.logsigmoid(labels * logits).sum() / img.shape[0]


def _p2p(sends: list[tuple[torch.Tensor, int]], recv_from: list[int]) -> list[torch.Tensor]:
    ops, bufs = [], []
    for t, dst in sends:
        ops.append(dist.P2POp(dist.isend, t, dst))
    for src in recv_from:
        bufs.append(torch.empty_like(sends[0][0]))
        ops.append(dist.P2POp(dist.irecv, bufs[-1], src))
    for req in dist.batch_isend_irecv(ops):
        req.wait()
    return bufs


@torch.no_grad()
def solution(image_features: torch.Tensor, text_features: torch.Tensor,
             logit_scale: float, logit_bias: float) -> torch.Tensor:
    world, rank = dist.get_world_size(), dist.get_rank()
    left, right = (rank - 1) % world, (rank + 1) % world
    loss = _block_loss(image_features, text_features, logit_scale, logit_bias, True)
    to_left = to_right = text_features
    for _ in range((world - 1) // 2):
        # texts travelling left arrive from the right neighbour and vice versa
        from_right, from_left = _p2p([(to_left, left), (to_right, right)], [right, left])
        loss = loss + _block_loss(image_features, from_right, logit_scale, logit_bias, False)
        loss = loss + _block_loss(image_features, from_left, logit_scale, logit_bias, False)
        to_left, to_right = from_right, from_left
    if (world - 1) % 2:
        (last,) = _p2p([(to_right, right)], [left])
        loss = loss + _block_loss(image_features, last, logit_scale, logit_bias, False)
    return loss
