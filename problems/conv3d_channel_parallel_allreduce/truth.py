import torch
import torch.nn.functional as F


def expected(inputs, world_size):
    x = torch.cat([i[0] for i in inputs], dim=1).double()
    w = torch.cat([i[1] for i in inputs], dim=1).double()
    _, _, bias, stride, padding, dilation = inputs[0]
    out = F.conv3d(x, w, bias.double(), stride, padding, dilation).to(inputs[0][0].dtype)
    return [out] * world_size
