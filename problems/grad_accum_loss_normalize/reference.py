import torch
import torch.distributed as dist


def solution(
    loss: torch.Tensor,
    local_valid_tokens: torch.Tensor,
    global_valid_tokens: torch.Tensor,
    grad_normalized_loss: torch.Tensor,
    grad_loss_sum: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    # a rank with no valid tokens for a slot may hold a non-finite mean: it must add 0
    empty = local_valid_tokens == 0
    loss = torch.where(empty, torch.nan_to_num(loss), loss)
    loss_sum = loss * local_valid_tokens
    dist.all_reduce(loss_sum, op=dist.ReduceOp.SUM)
    normalized_loss = loss_sum / global_valid_tokens
    grad_loss = (grad_normalized_loss * local_valid_tokens / global_valid_tokens
                 + grad_loss_sum * local_valid_tokens)
    return normalized_loss, loss_sum, grad_loss
