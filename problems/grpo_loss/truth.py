"""Ground truth for `grpo_loss`: every rank's output from all ranks' inputs, in one process."""

import torch


def expected(inputs, world_size):
    rewards = torch.cat([i[2] for i in inputs], dim=1).double()  # [groups, all samples]
    mean, std = rewards.mean(1, keepdim=True), rewards.std(1, keepdim=True)
    loss_sum, count = 0.0, 0.0
    for lp_new, lp_old, rw, mask in inputs:
        adv = ((rw.double() - mean) / (std + 1e-4))[..., None]
        ratio = torch.exp(lp_new.double() - lp_old.double())
        per = -torch.minimum(ratio * adv, ratio.clamp(0.8, 1.2) * adv)
        loss_sum += float((per * mask.double()).sum())
        count += float(mask.double().sum())
    loss = torch.tensor(loss_sum / count, dtype=inputs[0][0].dtype)
    return [(loss.clone(), ((rw.double() - mean) / (std + 1e-4)).to(rw.dtype)) for _, _, rw, _ in inputs]
