"""Device smoke of the trust boundary at world size 1 (one GPU)."""
import json, os, sys, time, traceback
sys.path.insert(0, os.getcwd())
from pathlib import Path
from pkb_ray.config.schema import TimingConfig, TimeoutConfig
from pkb_ray.engine import EvalRequest, evaluate, launch, nccl_stub

OUT = Path(os.environ.get("OUT", "/tmp/out"))
H = Path("tests/engine")
CACHE = "/tmp/pkb_cache"
print("plan:", launch.plan_sandbox().description, flush=True)
t = time.time(); print("stub:", nccl_stub.build(CACHE), f"{time.time()-t:.1f}s", flush=True)
TIMING = TimingConfig(max_timing_s=3.0)
TO = TimeoutConfig(start_s=120.0, load_s=120.0, trial_s=30.0, timing_s=60.0)
rows = []
def run(tag, path, ws=1, **kw):
    args = dict(problem_id="sum_ranks", problems_source=str(H / "fixtures/problems"), candidate_source=Path(path).read_text(),
                world_size=ws, device="cuda", size="bench", trials=5, timing=TIMING, timeouts=TO, cache_dir=CACHE)
    args.update(kw)
    t = time.time()
    try:
        r = evaluate(EvalRequest(**args), load_problem="tests.engine.fixtures.loaders:load_fixture_problem")
    except Exception:
        traceback.print_exc(); return None
    d = dict(tag=tag, s=round(time.time()-t, 2), correct=r.correct, failure=r.failure and r.failure.value,
             msg=r.message[:300], cand_ms=r.candidate_ms, ref_ms=r.reference_ms, speedup=r.speedup,
             ci=[r.speedup_ci_low, r.speedup_ci_high], flags=r.flags, jcr=r.judge_clock_ratio,
             checked=r.checked_timed_calls, sandbox=r.sandbox, ev=r.evidence)
    print(json.dumps(d), flush=True)
    if not r.correct and r.failure and r.failure.value in ("harness_error", "runtime_error"):
        print(r.log[-3000:], flush=True)
    rows.append(d)
    return r
A = H / "adversarial"
run("store_exchange", H / "fixtures/candidates/store_exchange.py")
run("store_exchange again", H / "fixtures/candidates/store_exchange.py")
run("honest_symm", A / "gpu/honest_peer_sum.py")
run("honest_symm host transport", A / "gpu/honest_peer_sum.py", transport="host")
run("honest_symm cuda transport", A / "gpu/honest_peer_sum.py", transport="cuda")
for name in ["gpu/nccl_native", "gpu/nccl_all_reduce", "gpu/patches_cuda_event", "gpu/illegal_address",
             "gpu/honest_peer_sum", "gpu/scans_gpu_memory", "gpu/side_stream", "gpu/host_sync_sum",
             "walks_frames", "probes_files", "opens_socket", "reads_judge_memory", "forges_done"]:
    run(name, A / f"{name}.py")
run("reference self (guard off)", Path("tests/engine/fixtures/problems/sum_ranks/reference.py"), guard=False)
(OUT / "smoke.json").write_text(json.dumps(rows, indent=1))
