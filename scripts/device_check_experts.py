"""Check and time the hand-written expert collectives against NCCL on one node.

Run on the GPU node (no torchrun needed; it spawns one process per GPU):

    export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
    python scripts/device_check_experts.py --world-size 2 --out "$OUT"

For each of allreduce, allgather, reduce_scatter, alltoall, broadcast it loads
problems/<id>/{problem.yaml, inputs.py, reference.py, expert.py}, then per size:
  * 5 trials with fresh random inputs (different seed each): expert output vs the
    NCCL reference within the problem's tolerance on every rank, input untouched;
  * back-to-back: 6 calls on 6 different inputs with no host sync in between,
    every output checked afterwards (catches races between successive calls);
  * timing: barrier + synchronize before each call, CUDA events around it, the
    slowest rank's time per call, median of --iters calls (inputs alternate
    between two sets; the outputs of the timed calls are checked too), for the
    expert, the reference (NCCL, as the problem writes it: clone/alloc included)
    and the bare NCCL op on preallocated buffers.
Link bandwidth is measured in the same run (256 MiB peer reads, all ranks at
once, SM kernel and copy engine); roofline = max(NVLink bytes per rank / link
bandwidth, HBM bytes per rank / HBM bandwidth) with the problem's roofline()
counts; fraction = roofline time / expert time.
"""
from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import sys
import types
import time
import traceback
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
PROBLEMS = ["allreduce", "allgather", "reduce_scatter", "alltoall", "broadcast"]
# Variants that force the code paths meant for larger worlds, so that they get
# tested on 2 GPUs too: (problem, variant name, module attribute, value).
VARIANTS = [
    ("allreduce", "two_shot", {"TWO_SHOT_MIN_WORLD": 2}),
    ("broadcast", "scatter_allgather", {"SCATTER_MIN_WORLD": 2}),
    # the path before the fast one (FAST = False: handle.barrier, torch copies, per-call
    # argument packing), measured in the same run for an old-vs-new comparison
    ("allreduce", "old", {"FAST": False}),
    ("allgather", "old", {"FAST": False}),
    ("reduce_scatter", "old", {"FAST": False}),
    ("alltoall", "old", {"FAST": False}),
    ("broadcast", "old", {"FAST": False}),
    ("allreduce", "two_shot_old", {"TWO_SHOT_MIN_WORLD": 2, "FAST": False}),
    # allreduce ships with FAST off (not measured faster), so its fast path is a variant
    ("allreduce", "fast", {"FAST": True}),
    ("allreduce", "two_shot_fast", {"TWO_SHOT_MIN_WORLD": 2, "FAST": True}),
    ("broadcast", "scatter_allgather_old", {"SCATTER_MIN_WORLD": 2, "FAST": False}),
    # remote phase through the copy engines (cudaMemcpyAsync on peer views; these and
    # the pipelined variants bypass the fast path)
    ("allgather", "copy_engine", {"COPY_ENGINE": True}),
    ("alltoall", "copy_engine", {"COPY_ENGINE": True}),
    ("broadcast", "copy_engine", {"COPY_ENGINE": True}),
    ("allreduce", "two_shot_copy_engine", {"TWO_SHOT_MIN_WORLD": 2, "COPY_ENGINE": True}),
    # single-kernel pipelined variants (flags instead of barriers), last: a
    # synchronization bug there must not spoil the measurements above
    ("allreduce", "pipelined", {"PIPELINED": True}),
    ("allgather", "pipelined", {"PIPELINED": True}),
    ("reduce_scatter", "pipelined", {"PIPELINED": True}),
    ("alltoall", "pipelined", {"PIPELINED": True}),
]
SAFE_ENV = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}


def _load(path: Path, name: str):
    """Import a file as a module, with its `# pkb:include` lines expanded as the harness does."""
    from pkb_ray.problems.includes import read_candidate_file

    mod = types.ModuleType(name)
    mod.__file__ = str(path)
    sys.modules[name] = mod  # dataclasses in the module look themselves up here
    exec(compile(read_candidate_file(path), str(path), "exec"), mod.__dict__)
    return mod


def _cases(pid: str, meta: dict, world: int) -> list[tuple[str, dict]]:
    bench = dict(meta["sizes"]["bench"])
    bench.setdefault("dtype", meta.get("dtype", "bfloat16"))
    cases = [("bench", bench)]
    if pid in ("reduce_scatter", "alltoall"):
        # the brief's size: 64 MiB of bf16 input per rank at this world size
        big = dict(bench, rows=8192 // world, cols=4096)
        if big != bench:
            cases.append(("64MiB_per_rank", big))
    return cases


def _nccl_raw(pid, x, world):
    """The bare NCCL op on preallocated buffers (no clone, no allocation)."""
    import torch
    import torch.distributed as dist

    if pid == "allreduce":
        buf = x.clone()
        return lambda: dist.all_reduce(buf)
    if pid == "allgather":
        out = torch.empty((world * x.shape[0],) + tuple(x.shape[1:]), dtype=x.dtype, device=x.device)
        return lambda: dist.all_gather_into_tensor(out, x)
    if pid == "reduce_scatter":
        out = torch.empty((x.shape[0] // world,) + tuple(x.shape[1:]), dtype=x.dtype, device=x.device)
        return lambda: dist.reduce_scatter_tensor(out, x)
    if pid == "alltoall":
        out = torch.empty_like(x)
        return lambda: dist.all_to_all_single(out, x)
    if pid == "broadcast":
        buf = x.clone()
        return lambda: dist.broadcast(buf, src=0)
    raise KeyError(pid)


def _time(fn, inputs, iters, warmup):
    """Per-call times (ms) of this rank; barrier + sync before each call."""
    import torch
    import torch.distributed as dist

    times, outs = [], {}
    _time.host = []
    for i in range(warmup + iters):
        k = i % len(inputs)
        dist.barrier()
        torch.cuda.synchronize()
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        h0 = time.perf_counter()
        out = fn(*inputs[k])
        h1 = time.perf_counter()
        b.record()
        torch.cuda.synchronize()
        if i >= warmup:
            times.append(a.elapsed_time(b))
            _time.host.append((h1 - h0) * 1e3)
        outs[k] = out
    return times, outs


def _stream_ms(fn, inputs, calls=20, reps=3):
    """Per-call time (ms) of `calls` back-to-back calls with no sync in between: the host
    runs ahead, so this is max(GPU time, host issue time) per call, not one isolated call."""
    import torch
    import torch.distributed as dist

    res = []
    for _ in range(reps):
        dist.barrier()
        torch.cuda.synchronize()
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        for i in range(calls):
            fn(*inputs[i % len(inputs)])
        b.record()
        torch.cuda.synchronize()
        res.append(a.elapsed_time(b) / calls)
    return res


def _slowest_median(times):
    import torch.distributed as dist

    allt = [None] * dist.get_world_size()
    dist.all_gather_object(allt, times)
    per_call = [max(ts) for ts in zip(*allt)]
    return statistics.median(per_call), per_call


def _close(out, ref, rtol, atol):
    import torch

    if out is None or tuple(out.shape) != tuple(ref.shape) or out.dtype != ref.dtype:
        return False, float("inf")
    diff = (out.float() - ref.float()).abs()
    err = float(diff.max()) if diff.numel() else 0.0
    ok = bool(torch.isfinite(out.float()).all()) and bool((diff <= atol + rtol * ref.float().abs()).all())
    return ok, err


def _all_ok(flag: bool) -> bool:
    import torch.distributed as dist

    flags = [None] * dist.get_world_size()
    dist.all_gather_object(flags, bool(flag))
    return all(flags)


def _link_bandwidth(rank, world, allgather_expert):
    """256 MiB read from the next rank's symmetric buffer by every rank at once."""
    import torch
    import torch.distributed as dist
    import torch.distributed._symmetric_memory as symm_mem

    nbytes = 256 * 1024 * 1024
    buf = symm_mem.empty(nbytes, dtype=torch.uint8, device=f"cuda:{rank}")
    buf.copy_(torch.randint(0, 256, (nbytes,), dtype=torch.uint8, device=buf.device))
    h = symm_mem.rendezvous(buf, dist.group.WORLD)
    peer = (rank + 1) % world
    src = h.get_buffer(peer, (nbytes,), torch.uint8)
    dst = torch.empty(nbytes, dtype=torch.uint8, device=buf.device)
    ptrs = torch.tensor(list(h.buffer_ptrs), dtype=torch.int64, device=buf.device)
    copy_k = allgather_expert._kernels()[0]
    units = nbytes // 16
    tab = torch.tensor([[0, units, peer, 0, -1, 0, -2, 0]], dtype=torch.int64, device=buf.device)
    h.barrier(0)
    torch.cuda.synchronize()

    def sm():
        copy_k(allgather_expert._grid(units), (512, 1, 1), [ptrs, tab, 1, dst, dst, units, 1])

    def ce():
        dst.copy_(src)

    push_tab = torch.tensor([[0, units, -1, 0, peer, 0, -2, 0]], dtype=torch.int64, device=buf.device)

    def sm_push():  # writes our dst (= the peer's data) back into the peer's buffer
        copy_k(allgather_expert._grid(units, 4), (512, 1, 1), [ptrs, push_tab, 1, dst, dst, units, 1])

    res = {}
    for name, fn in (("sm_pull", sm), ("copy_engine", ce), ("sm_push", sm_push)):
        times, _ = _time(lambda: fn(), [()], iters=10, warmup=3)
        med, _ = _slowest_median(times)
        res[name + "_GBps"] = nbytes / (med * 1e-3) / 1e9
    h.barrier(0)
    torch.cuda.synchronize()
    ok = bool(torch.equal(dst[:1 << 20].cpu(), src[:1 << 20].cpu()))
    res["sm_copy_correct"] = _all_ok(ok)
    # HBM: local 1 GiB device-to-device copy, bytes read + written
    a = torch.empty(1 << 30, dtype=torch.uint8, device=buf.device)
    b = torch.empty_like(a)
    times, _ = _time(lambda: b.copy_(a), [()], iters=10, warmup=3)
    med, _ = _slowest_median(times)
    res["hbm_copy_GBps"] = 2 * a.numel() / (med * 1e-3) / 1e9
    h.barrier(0)
    torch.cuda.synchronize()
    return res


def _check_problem(pid, variant, rank, world, opts, link, out_rows):
    import torch

    import yaml

    pdir = REPO / "problems" / pid
    meta = yaml.safe_load((pdir / "problem.yaml").read_text())
    inputs_mod = _load(pdir / "inputs.py", f"inputs_{pid}")
    ref_mod = _load(pdir / "reference.py", f"reference_{pid}")
    t0 = time.perf_counter()
    expert = _load(pdir / "expert.py", f"expert_{pid}_{variant or 'default'}")
    import_s = time.perf_counter() - t0
    name = pid if not variant else f"{pid}[{variant}]"
    if variant:
        attrs = next(a for p, n, a in VARIANTS if p == pid and n == variant)
        for attr, val in attrs.items():
            assert hasattr(expert, attr), attr
            setattr(expert, attr, val)
    rtol, atol = float(meta.get("rtol", 0.0)), float(meta.get("atol", 0.0))
    dev = f"cuda:{rank}"
    for size_name, size in _cases(pid, meta, world):
        row = {"problem": name, "size": size_name, "shape_args": size, "world_size": world}
        try:
            # correctness: fresh inputs every trial
            errs, ok_all, first_call_s = [], True, None
            for t in range(opts.trials):
                (x,) = inputs_mod.make_inputs(rank, world, 1000 + t, size, device=dev)
                x0 = x.clone()
                ref = ref_mod.solution(x.clone())
                torch.cuda.synchronize()
                c0 = time.perf_counter()
                out = expert.solution(x)
                torch.cuda.synchronize()
                if first_call_s is None:
                    first_call_s = time.perf_counter() - c0
                ok, err = _close(out, ref, rtol, atol)
                ok = ok and bool(torch.equal(x, x0))
                ok_all &= ok
                errs.append(err)
            row["trials_correct"] = _all_ok(ok_all)
            row["max_abs_err"] = max(errs)
            row["first_call_s_rank0"] = first_call_s
            row["nvrtc_compile_s"] = expert.COMPILE_SECONDS
            row["module_import_s"] = import_s
            # back-to-back calls on different inputs, no host sync in between
            xs = [inputs_mod.make_inputs(rank, world, 2000 + i, size, device=dev)[0] for i in range(6)]
            torch.cuda.synchronize()
            outs = [expert.solution(x) for x in xs]
            torch.cuda.synchronize()
            bb = all(_close(o, ref_mod.solution(x.clone()), rtol, atol)[0] for o, x in zip(outs, xs))
            row["back_to_back_correct"] = _all_ok(bb)
            del xs, outs
            # timing
            sets = [inputs_mod.make_inputs(rank, world, 3000 + i, size, device=dev) for i in range(2)]
            refs = [ref_mod.solution(s[0].clone()) for s in sets]
            et, eouts = _time(expert.solution, sets, opts.iters, opts.warmup)
            row["expert_host_ms_rank0"] = statistics.median(_time.host)  # Python time to issue one call
            timed_ok = all(_close(eouts[k], refs[k], rtol, atol)[0] for k in eouts)
            row["timed_outputs_correct"] = _all_ok(timed_ok)
            # which path ran: plans built by the fast path, and why one could not be built
            row["fast_plans"] = sum(1 for p in getattr(expert, "_PLANS", {}).values() if p)
            row["fast_errors"] = list(getattr(expert, "FAST_ERRORS", []))
            e_med, _ = _slowest_median(et)
            del eouts
            rt, _ = _time(ref_mod.solution, sets, opts.iters, opts.warmup)
            r_med, _ = _slowest_median(rt)
            raw = _nccl_raw(pid, sets[0][0], world)
            wt, _ = _time(lambda: raw(), [()], opts.iters, opts.warmup)
            w_med, _ = _slowest_median(wt)
            row["expert_stream_ms"], _ = _slowest_median(_stream_ms(expert.solution, sets))
            row["nccl_raw_stream_ms"], _ = _slowest_median(_stream_ms(lambda: raw(), [()]))
            rl = inputs_mod.roofline(world, size)
            link_bw = max(link["sm_pull_GBps"], link["copy_engine_GBps"], link["sm_push_GBps"]) * 1e9
            roof_s = max(rl["nvlink_bytes_per_rank"] / link_bw, rl["hbm_bytes_per_rank"] / (link["hbm_copy_GBps"] * 1e9))
            row.update(
                expert_ms=e_med,
                nccl_ref_ms=r_med,
                nccl_raw_ms=w_med,
                speedup_vs_ref=r_med / e_med,
                speedup_vs_raw=w_med / e_med,
                nvlink_bytes_per_rank=rl["nvlink_bytes_per_rank"],
                hbm_bytes_per_rank=rl["hbm_bytes_per_rank"],
                roofline_ms=roof_s * 1e3,
                roofline_fraction=roof_s * 1e3 / e_med,
                nccl_raw_roofline_fraction=roof_s * 1e3 / w_med,
                expert_effective_GBps=rl["nvlink_bytes_per_rank"] / (e_med * 1e-3) / 1e9,
                iters=opts.iters,
            )
            del sets, refs
        except Exception as exc:  # record and go on with the next case
            row["error"] = f"{type(exc).__name__}: {exc}"
            row["traceback"] = traceback.format_exc()[-3000:]
            print(f"[rank {rank}] {name} {size_name}: {row['error']}", flush=True)
        torch.cuda.empty_cache()
        if rank == 0:
            out_rows.append(row)
            print(json.dumps({k: v for k, v in row.items() if k != "traceback"}), flush=True)


def _worker(rank, world, port, opts, result_path):
    os.environ.update(SAFE_ENV)
    import torch
    import torch.distributed as dist

    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world,
                            device_id=torch.device(f"cuda:{rank}"))
    rows: list[dict] = []
    result = {"world_size": world, "torch": torch.__version__, "nccl": ".".join(map(str, torch.cuda.nccl.version())),
              "gpu": torch.cuda.get_device_name(rank), "rows": rows}
    try:
        ag = _load(REPO / "problems" / "allgather" / "expert.py", "expert_linkbw")
        result["link"] = _link_bandwidth(rank, world, ag)
        result["link"]["first_nvrtc_compile_s"] = ag.COMPILE_SECONDS  # first compile in a fresh process
        if rank == 0:
            print("link", json.dumps(result["link"]), flush=True)
        todo = [(p, None) for p in opts.problems] + [(p, v) for p, v, _ in VARIANTS
                                                     if p in opts.problems and (opts.variants is None or v in opts.variants)]
        todo = todo * opts.repeat  # a second pass shows the run-to-run spread
        for pid, variant in todo:
            _check_problem(pid, variant, rank, world, opts, result["link"], rows)
            if rank == 0:
                Path(result_path).write_text(json.dumps(result, indent=1))
    finally:
        if rank == 0:
            Path(result_path).write_text(json.dumps(result, indent=1))
        dist.destroy_process_group()


def _markdown(result, command, device):
    lines = [
        "# Expert collectives vs NCCL (standalone check)",
        "",
        f"- command: `{command}`",
        f"- device: {device}",
        f"- world size {result['world_size']}, torch {result['torch']}, NCCL {result['nccl']}, GPU {result['gpu']}",
    ]
    link = result.get("link", {})
    if link:
        lines.append(
            f"- link (256 MiB to/from the next rank, all ranks at once): SM pull {link['sm_pull_GBps']:.0f} GB/s, "
            f"copy engine pull {link['copy_engine_GBps']:.0f} GB/s, SM push {link['sm_push_GBps']:.0f} GB/s "
            f"(roofline uses the best); HBM copy {link['hbm_copy_GBps']:.0f} GB/s"
        )
    lines += [
        "- times: median over calls of the slowest rank, barrier + synchronize before each call;"
        " ref = the problem's reference.py (NCCL, allocation/clone included), raw = bare NCCL op on preallocated buffers",
        "",
        "| problem | size | correct (trials / back-to-back / timed) | fast plans | expert ms | host ms | NCCL ref ms |"
        " NCCL raw ms | speedup vs ref | speedup vs raw | roofline ms | roofline fraction | expert / raw ms, 20 calls"
        " back-to-back | NVRTC compile s | first call s |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in result["rows"]:
        if "error" in r:
            lines.append(f"| {r['problem']} | {r['size']} | ERROR: {r['error'][:120]} | | | | | | | | | | | | |")
            continue
        c = f"{r['trials_correct']} / {r['back_to_back_correct']} / {r['timed_outputs_correct']}"
        lines.append(
            f"| {r['problem']} | {r['size']} {r['shape_args']['rows']}x{r['shape_args']['cols']} | {c} | "
            f"{r.get('fast_plans', '')}{' ' + ';'.join(r['fast_errors'])[:80] if r.get('fast_errors') else ''} | "
            f"{r['expert_ms']:.3f} | {r['expert_host_ms_rank0']:.3f} | {r['nccl_ref_ms']:.3f} | {r['nccl_raw_ms']:.3f} | {r['speedup_vs_ref']:.2f} | "
            f"{r['speedup_vs_raw']:.2f} | {r['roofline_ms']:.3f} | {r['roofline_fraction']:.2f} | "
            f"{r['expert_stream_ms']:.3f} / {r['nccl_raw_stream_ms']:.3f} | {(r['nvrtc_compile_s'] or 0):.2f} | {r['first_call_s_rank0']:.2f} |"
        )
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--world-size", type=int, default=2)
    ap.add_argument("--trials", type=int, default=5)
    ap.add_argument("--iters", type=int, default=60)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--problems", nargs="*", default=PROBLEMS)
    ap.add_argument("--variants", nargs="*", default=None, help="variant names to run (default: all)")
    ap.add_argument("--repeat", type=int, default=1, help="run the whole list this many times")
    ap.add_argument("--out", default=os.environ.get("OUT") or str(REPO / "benchmarks" / "results"))
    ap.add_argument("--device", default="", help="device description to record")
    ap.add_argument("--timeout", type=float, default=420.0, help="kill the ranks after this many seconds")
    opts = ap.parse_args(argv)
    os.environ.update(SAFE_ENV)
    from pkb_ray.engine.launcher import run_ranks

    out = Path(opts.out)
    out.mkdir(parents=True, exist_ok=True)
    result_path = out / "experts_standalone.json"
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    t0 = time.time()
    group = run_ranks(_worker, opts.world_size, (port, opts, str(result_path)), timeout_s=opts.timeout)
    status = "ok" if group.ok else group.why()
    command = "python " + " ".join([os.path.relpath(__file__, REPO)] + (argv if argv is not None else sys.argv[1:]))
    result = json.loads(result_path.read_text()) if result_path.exists() else {"rows": [], "world_size": opts.world_size,
                                                                                "torch": "?", "nccl": "?", "gpu": "?"}
    result.update(command=command, device=opts.device, status=status, wall_s=time.time() - t0)
    result_path.write_text(json.dumps(result, indent=1))
    md = _markdown(result, command, opts.device)
    (out / "experts_standalone.md").write_text(md)
    print(md)
    print("status:", status)
    return 0 if status == "ok" and all("error" not in r for r in result["rows"]) else 1


if __name__ == "__main__":
    sys.exit(main())
