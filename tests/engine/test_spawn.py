"""One way into every child process (engine/launch/spawn.py, engine/protocol/start.py): typed start records through
the wire codec, one environment builder, and no other channel left in the package."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from pkb_ray.engine import launch
from pkb_ray.engine.build import prebuild
from pkb_ray.engine.protocol import codec
from pkb_ray.engine.wire.frames import ProtocolError

ROOT = Path(__file__).resolve().parents[2]

RECORDS = [
    launch.JudgeStart(rank=1, world_size=2, device="cuda", store_port=29500, control_fd=7, gate_fd=8,
                     gate_timeout_us=100_000, group_timeout_s=600.0),
    launch.WorkerStart(device="cpu", world_size=2, guard=True, channel_fds=[5, 6]),
    launch.BuildStart(candidate_file="candidate.py"),
    launch.BuildProbed(ok=False, log="Traceback ..."),
    launch.AgentStart(mode="profile", world_size=2, device="cpu", timeout_s=30.0, profile_calls=5),
    launch.ProfileStart(fingerprint="cuda:H200x2"),
]


@pytest.mark.parametrize("record", RECORDS, ids=lambda r: r.op)
def test_a_start_record_reads_back_as_it_was_written(record, monkeypatch):
    spec = launch.SpawnSpec("pkb_ray.engine.worker.zygote", record, env={})
    argv = spec.argv()
    assert argv[1:3] == ["-m", "pkb_ray.engine.worker.zygote"] and len(argv) == 4
    monkeypatch.setattr("sys.argv", argv[2:])
    assert launch.payload(type(record)) == record


def test_a_start_record_is_checked_field_by_field():
    wire = codec.to_wire(RECORDS[1])
    with pytest.raises(ProtocolError, match="world_size"):
        codec.decode({**wire, "world_size": "2"}, (launch.WorkerStart,))  # the old "cuda,2,1" string
    with pytest.raises(ProtocolError, match="unexpected message"):
        codec.decode(wire, (launch.JudgeStart,))
    with pytest.raises(ProtocolError, match="unknown fields"):
        codec.decode({**wire, "sys_path": []}, (launch.WorkerStart,))


def test_child_env_is_one_allow_list_for_every_child(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "4,5,6,7")
    cpu = launch.child_env("cpu", 2)
    assert cpu["CUDA_VISIBLE_DEVICES"] == "" and int(cpu["OMP_NUM_THREADS"]) >= 1
    assert cpu["TORCH_EXTENSIONS_DIR"] == "{TMP}/ext" and cpu["GLOO_SOCKET_IFNAME"] == "lo"
    assert "PYTHONPATH" not in cpu or "{TMP}" not in cpu["PYTHONPATH"]
    gpu = launch.child_env("cuda", 2, (2, 3), torch_cuda_arch_list="9.0")
    assert gpu["CUDA_VISIBLE_DEVICES"] == "2,3" and gpu["TORCH_CUDA_ARCH_LIST"] == "9.0"
    assert launch.child_env("cuda", 2)["CUDA_VISIBLE_DEVICES"] == "4,5,6,7"  # this process's GPUs
    judge = launch.child_env("cuda", 2, (0, 1), sandboxed=False)
    assert "TORCH_EXTENSIONS_DIR" not in judge and str(ROOT) in judge["PYTHONPATH"].split(":")
    for env in (cpu, gpu, judge):
        assert "OPENAI_API_KEY" not in env and env["NCCL_NVLS_ENABLE"] == "0"


def test_a_sandboxed_child_needs_a_sandbox_and_a_trusted_one_none():
    with pytest.raises(ValueError):
        launch.start(launch.SpawnSpec("x", RECORDS[2], env={}))
    box = launch.Sandboxed(plan=None, cache_dirs=(), gpu=False)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        launch.start_trusted(launch.SpawnSpec("x", RECORDS[2], env={}, sandbox=box))


def test_the_build_probe_answers_with_its_record(tmp_path):
    """A real sandboxed build probe on CPU (the `triton` mention makes the build run)."""
    ok = prebuild("# triton\ndef solution(x):\n    return x\n", "9.0", str(tmp_path), device="cuda")
    assert ok.ok and ok.extensions_dir, ok
    bad = prebuild("# triton\nraise RuntimeError('Error building extension k: k.cu:3: error: no')\n"
                   "def solution(x):\n    return x\n", "9.0", str(tmp_path), device="cuda")
    assert not bad.ok and bad.failure.value == "compile_error" and "error" in bad.message


_CHANNELS = re.compile(r"PKB_PREWARM|PKB_WORKER_FDS|PKB_AGENT_JOB|sys\.path\.insert|sys\.path\[:0\]")


def test_no_other_way_into_a_child():
    """The ad hoc channels of before, and edits of the import path, appear nowhere."""
    found = []
    for path in sorted([*ROOT.glob("pkb_ray/**/*.py"), *ROOT.glob("scripts/*.py")]):
        rel = path.relative_to(ROOT).as_posix()
        found += [f"{rel}:{i}" for i, line in enumerate(path.read_text().splitlines(), 1) if _CHANNELS.search(line)]
    assert not found, found


def test_the_world_size_reaches_a_judge_as_an_int():
    """From the request to the judge's start record and the worker's: typed, never a string."""
    from pkb_ray.config.schema import EvalConfig
    from pkb_ray.engine.request import EvalRequest

    req = EvalRequest(problem_id="p", problems_source="builtin", candidate_source="", device="cpu", size="small",
                      eval=EvalConfig(world_size=2))
    start = launch.JudgeStart(rank=0, world_size=req.eval.world_size, device=req.device, store_port=1, control_fd=3,
                             gate_fd=4, gate_timeout_us=1, group_timeout_s=1.0)
    wire = json.loads(json.dumps(codec.to_wire(start)))
    assert codec.decode(wire, (launch.JudgeStart,)).world_size == 2


def test_the_job_a_judge_reads_is_the_request_typed():
    """The request crosses whole, its eval settings and their timing and timeout sections as
    their config records, not as dicts."""
    from pkb_ray.config.schema import EvalConfig, TimeoutConfig, TimingConfig
    from pkb_ray.engine.protocol.control import JudgeJob
    from pkb_ray.engine.request import EvalRequest

    req = EvalRequest(problem_id="allreduce", problems_source="builtin", candidate_source="", device="cpu",
                      size="small", eval=EvalConfig(trials=2, timing=TimingConfig(min_calls=7),
                                                    timeouts=TimeoutConfig(load_s=9.0), transport="host",
                                                    cache_dir="/tmp/c"))
    job = JudgeJob(request=req, loader="pkb_ray.problems:load_problem", reference_key="k", eval_id="e1", seed=5)
    back = codec.decode(json.loads(json.dumps(codec.to_wire(job))), (JudgeJob,))
    assert back == job and isinstance(back.request.eval.timing, TimingConfig)
    assert back.request.eval.timing.min_calls == 7 and back.request.guard
    wire = codec.to_wire(job)
    wire["request"]["eval"]["timing"]["min_calls"] = "7"
    with pytest.raises(ProtocolError, match="min_calls"):
        codec.decode(wire, (JudgeJob,))
