import torch
import torch.nn.functional as F

# On CUDA, cuDNN runs float32 convolutions in TF32 by default (torch.backends.cudnn.allow_tf32;
# the engine's judge and worker keep that default alike): x and the weight lose 13 mantissa
# bits, 2^-11 relative each. Over the small size's 216-term sums of unit-scale outputs that is
# 8.0e-4 on H200 (72 elements, one seed) and at most 1.3e-3 in an emulation on CPU (inputs
# rounded to TF32, exact products and sums; 200 seeds, world sizes 1-8). 5e-3 holds that with
# a margin; a missing partial, bias or channel slice moves outputs by 0.01-1.
ATOL = 5e-3


def expected(inputs, world_size):
    x = torch.cat([i[0] for i in inputs], dim=1).double()
    w = torch.cat([i[1] for i in inputs], dim=1).double()
    _, _, bias, stride, padding, dilation = inputs[0]
    out = F.conv3d(x, w, bias.double(), stride, padding, dilation).to(inputs[0][0].dtype)
    return [out] * world_size
