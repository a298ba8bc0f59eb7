"""Inside an agent sandbox: fork one process per rank and run a script or a profile.

    python -m pkb_ray.engine.worker.agent_rank AGENT_START   (engine/protocol/start.py; environment: PKB_WORKDIR)

It runs where a candidate's workers run (agent/ranks.py starts it through engine/launch/) and
holds nothing of the judges': no seeds, no reference outputs, no verdict. Each rank writes
its output to rank<r>.log; this process writes how each rank ended to its stderr (the
zygote's own lines, engine/worker/reap.py), which the sandbox keeps as zygote.log.

Modes:
  script   the model's script.py, with a default process group that can communicate
           (gloo on cpu; gloo and NCCL on cuda): its output is not a verdict, so it may
           compare itself with the collectives it replaces
  profile  the model's candidate.py under the worker's own conditions (the process group
           that cannot communicate, the NCCL-free guard) on inputs made outside, with
           torch.profiler; the summary goes to profile_rank<r>.json. Advisory only: code
           that writes that file itself only fools its own profile.
"""

from __future__ import annotations

import base64
import io
import json
import os
import sys
from datetime import timedelta

from pkb_ray.engine.protocol.start import AgentStart, payload
from pkb_ray.engine.worker import file_limit, reap


def _setup(r: int, job: AgentStart, workdir: str, communicating: bool) -> None:
    import torch
    import torch.distributed as dist

    ws, device = job.world_size, job.device
    os.environ.update(RANK=str(r), WORLD_SIZE=str(ws), LOCAL_RANK=str(r), LOCAL_WORLD_SIZE=str(ws))
    if device == "cuda":
        torch.cuda.set_device(r)
    else:
        torch.set_num_threads(max(1, (os.cpu_count() or 1) // ws))
    store = dist.FileStore(os.path.join(workdir, "store"), ws)
    timeout = timedelta(seconds=job.timeout_s)
    if communicating:
        backend = "cpu:gloo,cuda:nccl" if device == "cuda" else "gloo"
        dist.init_process_group(backend, store=store, rank=r, world_size=ws, timeout=timeout)
        # gloo's mesh can be whole on one rank while another still connects: a script that
        # never communicates would let the first exit and break the second's init ("Gloo
        # connectFullMesh failed", seen on a loaded 2-core machine). Every rank waits here.
        dist.barrier()
    else:
        from pkb_ray.engine.worker import no_network, process_group

        process_group.init(store, r, ws, job.timeout_s)
        no_network.install()  # the worker's conditions: no socket but a Unix one


def _run_script(r: int, job: AgentStart, workdir: str) -> None:
    import runpy

    _setup(r, job, workdir, communicating=True)
    runpy.run_path(os.path.join(workdir, "script.py"), run_name="__main__")


def _profile(r: int, job: AgentStart, workdir: str) -> None:
    import importlib.util

    import torch
    from torch.profiler import ProfilerActivity, profile

    from pkb_ray.engine.worker.nvlink_counters import link_bytes, nvlink_delta, open_counters

    _setup(r, job, workdir, communicating=False)
    device = f"cuda:{r}" if job.device == "cuda" else "cpu"
    # NVML is opened before the guard and the candidate's module: neither has run yet.
    counters = open_counters(r) if device != "cpu" else None
    with open(os.path.join(workdir, f"inputs_rank{r}.b64"), "rb") as f:
        inputs = torch.load(io.BytesIO(base64.b64decode(f.read())), weights_only=True)
    inputs = tuple(x.to(device) if isinstance(x, torch.Tensor) else x for x in inputs)
    from pkb_ray.engine.worker import guard

    guard.install()
    spec = importlib.util.spec_from_file_location("pkb_candidate", os.path.join(workdir, "candidate.py"))
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    sync = torch.cuda.synchronize if device != "cpu" else (lambda: None)
    for _ in range(2):  # warm-up: first-call compiles and allocations stay out of the profile
        module.solution(*inputs)
    sync()
    calls = job.profile_calls
    if device == "cpu":
        # Kineto's first start in a process took 4.9 s on the 2-core CI machine (0.03 s after);
        # the legacy profiler records the same CPU ops in 0.015 s. GPUs need Kineto (CUPTI).
        prof_cm = torch.autograd.profiler.profile(use_kineto=False)
    else:
        prof_cm = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA])
    before = link_bytes(counters)
    with prof_cm as prof:
        for _ in range(calls):
            module.solution(*inputs)
        sync()
    summary = _summary(prof, device != "cpu", calls)
    if counters is not None:
        summary["nvlink"] = nvlink_delta(counters, before, link_bytes(counters))
    with open(os.path.join(workdir, f"profile_rank{r}.json"), "w") as f:
        json.dump(summary, f)


def _summary(prof, on_gpu: bool, calls: int) -> dict:
    def self_us(e) -> float:
        if on_gpu:
            return float(getattr(e, "self_device_time_total", getattr(e, "self_cuda_time_total", 0.0)))
        return float(e.self_cpu_time_total)

    def total_us(e) -> float:
        if on_gpu:
            return float(getattr(e, "device_time_total", getattr(e, "cuda_time_total", 0.0)))
        return float(e.cpu_time_total)

    rows, copies = [], []
    for e in prof.key_averages():
        row = {"name": e.key[:100], "calls": int(e.count), "self_us": round(self_us(e), 2),
               "total_us": round(total_us(e), 2)}
        if on_gpu and ("memcpy" in e.key.lower() or "memset" in e.key.lower()):
            copies.append(row)
        elif row["self_us"] > 0:
            rows.append(row)
    rows.sort(key=lambda x: -x["self_us"])
    return {"rows": rows[:12], "copies": copies[:8], "profiled_calls": calls}


def _rank_main(r: int, job: AgentStart, workdir: str) -> int:
    try:
        (_run_script if job.mode == "script" else _profile)(r, job, workdir)
    except SystemExit as e:
        return e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    return 0


def main() -> int:
    file_limit.apply()
    job = payload(AgentStart)
    workdir = os.environ["PKB_WORKDIR"]
    import torch  # noqa: F401 - imported once, before the fork
    import torch.distributed  # noqa: F401

    print("ready", flush=True)  # ranks.py starts the time limit here
    reap.reap(reap.fork_ranks(job.world_size, workdir, lambda r: _rank_main(r, job, workdir)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
