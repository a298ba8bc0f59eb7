import torch
import torch.distributed as dist

NO_OBJECT_LOGIT = -10.0


def _all_gather_rows(x: torch.Tensor, counts: list[int]) -> torch.Tensor:
    """All-gather row blocks of different lengths (gloo needs equal sizes: pad to the longest)."""
    longest = max(counts)
    padded = x.new_zeros((longest, *x.shape[1:]))
    padded[: x.shape[0]] = x
    parts = [torch.empty_like(padded) for _ in counts]
    dist.all_gather(parts, padded)
    return torch.cat([p[:n] for p, n in zip(parts, counts)])


def _suppressed(binary: torch.Tensor, last_occluded: torch.Tensor, iou_threshold: float,
                reverse: bool) -> torch.Tensor:
    flat = binary.flatten(1).float()
    inter = flat @ flat.t()  # pixel counts: exact in fp32
    area = flat.sum(dim=1)
    iou = inter / (area[:, None] + area[None, :] - inter).clamp_min(1.0)
    pairs = torch.triu(iou >= iou_threshold, diagonal=1)  # i < j overlap
    li, lj = last_occluded[:, None], last_occluded[None, :]
    later = li < lj if reverse else li > lj
    # of an overlapping pair, the member occluded more recently is dropped, if the other one
    # has been occluded at all (last_occluded > -1)
    drop_i = (pairs & later & (lj > -1)).any(dim=1)
    drop_j = (pairs & later.t() & (li > -1)).any(dim=0)
    return drop_i | drop_j


@torch.no_grad()
def solution(masks: torch.Tensor, scores: torch.Tensor, counts: list, last_occluded: torch.Tensor,
             iou_threshold: float, reverse: bool):
    all_masks = _all_gather_rows(masks.float(), counts)
    all_scores = _all_gather_rows(scores.float(), counts)
    drop = _suppressed(all_masks > 0, last_occluded, iou_threshold, reverse)
    all_masks[drop] = NO_OBJECT_LOGIT
    return all_masks, all_scores, drop
