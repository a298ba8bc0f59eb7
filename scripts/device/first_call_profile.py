"""Where an expert's first call goes (NVRTC compile, symmetric allocation, rendezvous, plan),
in plain rank processes outside the harness: the largest part of an evaluation's
node-seconds is the candidate's first trial.

    python scripts/device/first_call_profile.py --world-size 2 [--problem allreduce] [--store file|tcp] [--prewarm]

Prints one JSON line per rank: seconds of each step. --prewarm allocates one small symmetric
buffer right after the process group, as a worker could while its sandbox sets up ahead of
its candidate: whether the first allocation's cost (2.0-2.9 s on 4 x H200) is paid once per
process, and what is left of the first call then.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import torch
import torch.distributed as dist
import torch.distributed._symmetric_memory as symm_mem
import torch.multiprocessing as mp

REPO = Path(__file__).resolve().parents[2]


def rank_main(rank: int, ws: int, problem: str, store_path: str, store_kind: str, port: int,
              prewarm: bool) -> None:
    os.environ.setdefault("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1")
    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
    t = {}
    t0 = time.perf_counter()
    torch.cuda.set_device(rank)
    torch.zeros(1, device="cuda")
    t["cuda_init"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    store = (dist.FileStore(store_path, ws) if store_kind == "file"
             else dist.TCPStore("127.0.0.1", port, ws, rank == 0))
    dist.init_process_group("cuda:nccl,cpu:gloo", store=store, rank=rank, world_size=ws)
    t["process_group"] = time.perf_counter() - t0
    if prewarm:
        t0 = time.perf_counter()
        warm = symm_mem.empty(64, device=f"cuda:{rank}")
        torch.cuda.synchronize()
        t["prewarm"] = time.perf_counter() - t0
        assert warm.numel() == 64  # held for the life of the rank, as a worker would
    from pkb_ray.problems import load_problem
    from pkb_ray.problems.includes import read_candidate_file

    p = load_problem("builtin", problem)
    src = read_candidate_file(REPO / "problems" / problem / "expert.py")
    t0 = time.perf_counter()
    mod = type(sys)("cand")
    exec(compile(src, "expert.py", "exec"), mod.__dict__)
    t["import"] = time.perf_counter() - t0
    if hasattr(mod, "_kernels"):
        t0 = time.perf_counter()
        mod._kernels()
        torch.cuda.synchronize()
        t["nvrtc_kernels"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    buf = symm_mem.empty(1 << 20, device=f"cuda:{rank}")
    t["symm_empty"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    symm_mem.rendezvous(buf, dist.group.WORLD)
    t["rendezvous"] = time.perf_counter() - t0
    args = p.make_inputs(rank, ws, 1234, "bench", f"cuda:{rank}")
    for i in range(3):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        mod.solution(*args)
        torch.cuda.synchronize()
        t[f"call{i}"] = time.perf_counter() - t0
    print(json.dumps({"rank": rank, "problem": problem, "store": store_kind, "prewarm": prewarm,
                      **{k: round(v, 4) for k, v in t.items()}}), flush=True)
    dist.destroy_process_group()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--world-size", type=int, default=2)
    ap.add_argument("--problem", default="allreduce")
    ap.add_argument("--store", choices=["file", "tcp"], default="file")
    ap.add_argument("--prewarm", action="store_true")
    a = ap.parse_args()
    d = tempfile.mkdtemp()
    mp.spawn(rank_main, args=(a.world_size, a.problem, os.path.join(d, "store"), a.store, 29555, a.prewarm),
             nprocs=a.world_size)


if __name__ == "__main__":
    main()
