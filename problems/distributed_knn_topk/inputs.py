import random

import torch

_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}


def _queries(rank, seed, size):
    # the evaluation set does not split evenly: query counts differ per rank
    # Python's RNG, not torch's: shapes must be computable without tensor data (the memory
    # estimate builds inputs under FakeTensorMode)
    return random.Random(seed * 1_000_003 + 7919 * rank + 5).randint(size["queries_min"], size["queries_max"])


def make_inputs(rank, world_size, seed, size, device="cpu"):
    dt = getattr(torch, size["dtype"])
    d, n, q = size["dim"], size["train_local"], _queries(rank, seed, size)
    g = torch.Generator(device=device).manual_seed(seed * 1_000_003 + rank)
    # features quantized to multiples of 1/8 in [-1/2, 1/2]: every similarity is a multiple of
    # 1/64 below 2^24/64 in magnitude, so fp32 accumulation is exact in any order and the
    # ranking is unambiguous up to exact ties (broken by the global train index)
    test = torch.randint(-4, 5, (q, d), generator=g, device=device).to(torch.float32) / 8
    train_t = torch.randint(-4, 5, (d, n), generator=g, device=device).to(torch.float32) / 8
    labels = torch.randint(0, size["classes"], (1, n), generator=g, device=device)
    return test.to(dt), train_t.to(dt), labels, int(size["k"])


def roofline(world_size, size):
    e = _BYTES[size["dtype"]]
    w, d, n, k = world_size, size["dim"], size["train_local"], size["k"]
    q_min = size["queries_min"]
    return {
        # each rank's queries meet every other rank's shard: either the other queries come in
        # (D values each) or this rank's queries' candidates come back (k sims + labels each)
        "nvlink_bytes_per_rank": (w - 1) * q_min * min(d * e, k * 12.0),
        # all query-train similarities, split evenly: 2 * Q_total * N_local * D per rank, halved
        # because the features are small integers: int8 tensor cores (twice the bf16 rate)
        # compute them exactly
        "flops_per_rank": 1.0 * w * q_min * n * d,
        # read the local train shard and the queries
        "hbm_bytes_per_rank": float((d * n + w * q_min * d) * e),
    }
