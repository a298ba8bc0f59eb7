# The shared part of the inputs of ring_attention_pp and ring_attention_tp. The including
# file sets GRID, the size key of the parallelism that ring attention is crossed with
# ("pp_size" or "tp_size"), and defines make_inputs and roofline.
import math

import torch

_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}
# q and k projections scaled up so scores have std ~4: attention picks a few keys, as in
# trained models, and outputs stay O(1) along the whole sequence (with std-1 scores the
# context of late positions averages thousands of keys down to ~0.02)
QK_GAIN = 2.0


def _layout(world_size, size):
    """(the other parallelism's size, cp_size): ranks form a grid of the two."""
    n = min(size[GRID], world_size)
    return n, world_size // n


def _ring_blocks(cp, size):
    """(attention blocks, K/V blocks received) per rank of a ring of cp sequence blocks."""
    # causal: cp^2/2 blocks of work over cp ranks; a balanced layout (zigzag) gives each
    # rank cp/2 of them, so that, not the last block's cp - 1/2, is the lower bound
    attn_blocks = cp / 2 if size["causal"] else cp
    kv_blocks = (cp - 1) / 2 if size["causal"] else cp - 1  # K/V blocks a rank must receive
    return attn_blocks, kv_blocks
