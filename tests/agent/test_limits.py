"""Start-up refusal, per-cell limits and the journal's rules: real HTTP server, real engine,
no sandbox started (the tools these episodes reach end before any process would)."""

from __future__ import annotations

import asyncio
import json

import pytest

from pkb_ray.agent import EndReason, JournalError, ToolsUnsupported, agent_config, require_tool_support, run_episode
from pkb_ray.agent.cli import episode_spec, split_overrides
from pkb_ray.agent.journal import End, EpisodeJournal
from pkb_ray.agent.redact import redact
from pkb_ray.config.schema import ModelConfig
from pkb_ray.config.validate import ConfigError
from tests.agent.conftest import overrides
from tests.agent.tool_server import ToolServer, Turn, step_of


def _episode(tmp_path, script, *extra: str):
    server = ToolServer(script).__enter__()
    sweep, agent = split_overrides(overrides(server.url, tmp_path) + list(extra))
    spec = episode_spec("sum_ranks", sweep, attempt=1)
    try:
        return asyncio.run(run_episode(spec, agent_config(agent))), server, spec
    finally:
        server.__exit__()


def test_model_without_tool_calling_is_refused_before_any_request(tmp_path):
    server_steps = []
    with pytest.raises(ToolsUnsupported, match=r"agent.tool_models=\[openai_compatible\]"):
        _episode(tmp_path, lambda b: server_steps.append(b) or Turn(), "agent.tool_models=[]")
    assert server_steps == []
    with pytest.raises(ToolsUnsupported, match="pseudo-model"):
        require_tool_support(ModelConfig(name="expert", provider="expert"), [])
    require_tool_support(ModelConfig(name="gpt4o", provider="openai", model_id="openai/gpt-4o"), [])  # litellm lists it


def test_the_episode_is_evaluated_with_the_sweeps_request(tmp_path):
    """The request comes from EvalRequest.from_config and the sweep's device rule: eval.*
    settings reach it, the guard follows the model's candidate source, and eval.device=auto
    without the GPUs it needs is refused as a sweep refuses it."""
    sweep, _ = split_overrides(overrides("http://127.0.0.1:9/v1", tmp_path))
    base = episode_spec("sum_ranks", sweep + ["eval.transport=host", "eval.sandbox.mode=none"], 1).base
    assert (base.device, base.size, base.guard, base.eval.transport, base.eval.sandbox.mode) == ("cpu", "small", True, "host", "none")
    assert base.cell_id == "openai_compatible/sum_ranks/tools"
    assert episode_spec("sum_ranks", sweep + ["eval.guard=false"], 1).base.guard is False
    reference = ["model=reference"] + [o for o in sweep if not o.startswith("model")]
    assert episode_spec("sum_ranks", reference, 1).base.guard is False  # the reference runs collectives
    with pytest.raises(ConfigError, match="eval.device=auto found no Ray node with >= 64 GPUs"):
        episode_spec("sum_ranks", sweep + ["eval.device=auto", "eval.world_size=64"], 1)


def test_tool_call_limit_ends_the_episode_with_its_reason(tmp_path):
    def script(body):  # a wrong call first (counted), then a check the limit must stop
        return Turn("", [("compile", {"source": "x"})]) if step_of(body) == 1 else \
            Turn("", [("check", {"source": "def solution(x):\n    return x\n"})])

    result, server, spec = _episode(tmp_path, script, "agent.limits.tool_calls=1")
    assert result.reason is EndReason.LIMIT_TOOL_CALLS
    assert "1 of 1 tool calls" in result.detail
    assert [step_of(b) for b in server.bodies] == [1, 2]
    bad = json.loads(server.bodies[1]["messages"][-1]["content"])
    assert "unknown tool 'compile'" in bad["error"]
    end = EpisodeJournal(spec.journal_path).end()
    assert end.reason == "limit_tool_calls" and end.final is None and result.tools_run == 0


def test_dollar_limit_counts_model_spend(tmp_path):
    result, server, _ = _episode(tmp_path, lambda b: Turn("thinking", []), "agent.limits.usd=0.0005",
                                 "model.price_input_per_mtok=100.0")
    assert result.reason is EndReason.LIMIT_USD and "USD" in result.detail
    assert len(server.bodies) == 1 and result.usage.model_usd >= 0.0005
    # A reply without a tool call was nudged (the nudge is part of the next request's prompt).


def test_gpu_seconds_limit_counts_tool_device_time(tmp_path):
    # A check of a module that does not parse: the engine answers parse_error without a process.
    script = lambda b: Turn("", [("check", {"source": "def solution(x)\n"})])  # noqa: E731
    result, server, spec = _episode(tmp_path, script, "agent.limits.gpu_s=0.00000001")
    assert result.reason is EndReason.LIMIT_GPU, result.detail
    assert "before the next model call" in result.detail  # the model is not asked again
    assert len(server.bodies) == 1 and result.usage.tool_calls == 1 and result.usage.gpu_s > 0
    (done,) = [r for r in EpisodeJournal(spec.journal_path).records if r.kind == "tool_result"]
    assert json.loads(done.content)["failure"] == "parse_error"


def test_changed_settings_are_refused_not_mixed(tmp_path):
    script = lambda b: Turn("", [("check", {"source": "def solution(x)\n"})])  # noqa: E731
    _episode(tmp_path, script, "agent.limits.tool_calls=1")
    with pytest.raises(JournalError, match="world_size"):
        _episode(tmp_path, script, "agent.limits.tool_calls=1", "eval.world_size=1")


def test_journal_reads_a_torn_tail_and_refuses_unknown_records(tmp_path):
    path = tmp_path / "e.jsonl"
    j = EpisodeJournal(path)
    j.append(End("submitted", "x"))
    with open(path, "a") as f:
        f.write('{"kind": "model", "ste')  # a kill mid-write
    assert [type(r) for r in EpisodeJournal(path).records] == [End]
    path.write_text(json.dumps({"version": 1, "kind": "thought", "text": "?"}) + "\n")
    with pytest.raises(JournalError, match=r"e.jsonl:1: unknown record \(kind 'thought'"):
        EpisodeJournal(path)


def test_redact_removes_paths_variables_and_secrets(monkeypatch):
    monkeypatch.setenv("SOME_API_KEY", "sk-live-abcdef123456")
    text = ('Traceback (most recent call last):\n'
            '  File "/opt/pkb/pkb_ray/engine/worker/rank.py", line 156, in run\n'
            '    res = run_calls(fn)\n'
            '  File "/tmp/candidate_rank1.py", line 3, in solution\n'
            '    raise RuntimeError(os.environ)\n'
            "RuntimeError: PKB_WORKDIR=/tmp/pkb_sbx_1 key sk-live-abcdef123456 in /root/.cache/x\n")
    out = redact(text)
    assert "rank.py" not in out and "run_calls" not in out  # the harness frame is gone
    assert 'File "candidate_rank1.py", line 3' in out
    assert "sk-live" not in out and "PKB_" not in out and "/root" not in out and "/tmp" not in out


def test_redact_removes_every_entry_of_a_path_list_and_the_sandbox_name():
    """What a candidate's script can print of its sandbox (os.environ, sys.path): a list's
    later entries and a harness variable's value go too; a URL stays a URL."""
    env = {"PATH": "/usr/bin:/root/.pyenv/versions/3.12/bin", "PKB_SANDBOX_ID": "pkb_sbx_1a2b3c",
           "PYTHONPATH": "/tmp/site:/work/main:/opt/ray/_private/workers"}
    out = redact(f"{env}\nPKB_WORKDIR=pkb_sbx_9f8e7d see https://pytorch.org/docs/stable/x.html")
    for needle in ("/root", "/work", "/opt", "/tmp", "/usr", "pyenv", "pkb_sbx_", "PKB_", "9f8e7d"):
        assert needle not in out, (needle, out)
    assert "https://pytorch.org/docs/stable/x.html" in out


def test_profile_answers_a_failed_build_without_starting_ranks(tmp_path):
    """On cuda a sweep builds profile's module on a CPU worker first; a failed build is the
    answer (as check gives it), and no rank is started for it."""
    from pkb_ray.agent.executor import ToolExecutor
    from pkb_ray.agent.tools import Tool, ToolRequest
    from pkb_ray.engine.build import BuildResult
    from pkb_ray.records import FailureClass

    sweep, _ = split_overrides(overrides("http://127.0.0.1:9/v1", tmp_path))
    base = episode_spec("sum_ranks", sweep, 1).base
    failed = BuildResult(ok=False, failure=FailureClass.COMPILE_ERROR, message="the module did not build",
                         log="kernel.cu(3): error: identifier \"x\" is undefined", compile_seconds=4.0)
    out = ToolExecutor(base, agent_config([])).execute(ToolRequest(Tool.PROFILE, "def solution(x):\n    return x\n"),
                                                       failed)
    assert out.result.failure == "compile_error" and "undefined" in out.result.compiler_output
    assert out.device_s == 0.0 and out.result.speedup is None
    assert "compile_error" in out.model_view()


def test_ranks_start_with_the_prebuilt_extensions_and_their_times(tmp_path):
    """The prebuild is copied into the ranks' extension directory before they start, with
    its modification times (torch then loads it instead of compiling again)."""
    import os

    from pkb_ray.agent.ranks import RankJob, run_on_ranks
    from pkb_ray.config.schema import SandboxConfig

    built = tmp_path / "built" / "candidate_ext"
    built.mkdir(parents=True)
    (built / "candidate_ext.so").write_bytes(b"\x7fELF not really")
    os.utime(built / "candidate_ext.so", (1_600_000_000, 1_600_000_000))
    script = ("import os\np = os.path.join(os.environ['TORCH_EXTENSIONS_DIR'], 'candidate_ext', 'candidate_ext.so')\n"
              "print('mtime', int(os.stat(p).st_mtime), open(p, 'rb').read()[1:4].decode())\n")
    job = RankJob("script", 2, "cpu", 60.0, {"script.py": script}, extensions_from=str(tmp_path / "built"))
    cache = tmp_path / "cache"
    cache.mkdir()
    out = run_on_ranks(job, SandboxConfig(), [str(cache)])
    assert not out.timed_out and [r.exit_code for r in out.ranks] == [0, 0], [r.output for r in out.ranks]
    assert all("mtime 1600000000 ELF" in r.output for r in out.ranks), [r.output for r in out.ranks]


def test_a_malformed_profile_report_fails_its_rank_not_the_evaluator():
    """profile_rank<r>.json is the sandbox's to write: garbage there fails that rank."""
    from pkb_ray.agent.executor import profile_summary
    from pkb_ray.agent.ranks import RankExit, RanksOutcome

    good = {"rows": [{"name": "k", "calls": 5, "self_us": 1.5, "total_us": 2.0}], "copies": [], "profiled_calls": 5}
    for bad in ([], {"rows": [{"name": "k", "evil": 1}]}, {"rows": "x"}, {"rows": [{"name": "k", "calls": "many",
                                                                                    "self_us": 1, "total_us": 1}]},
                {"rows": [{"name": "k", "calls": float("inf"), "self_us": 1, "total_us": 1}]}):
        out = profile_summary(RanksOutcome([RankExit(0, 0, "", good), RankExit(1, 0, "", bad)], False, 1.0),
                              "CPU ops", "bench", 60.0)
        assert not out.ok and "rank 1: its profile report is malformed" in out.message, (bad, out)
        assert [r.rank for r in out.ranks] == [0] and out.ranks[0].rows[0].self_us == 1.5


def test_nvlink_bytes_in_a_profile_report_are_bounded_ints():
    """The NVLink bytes a rank's profile reports (NVML's counters on a GPU) reach the model as
    ints; a float, a negative, a huge or a non-number count fails that rank; a rank without
    counters says why."""
    from pkb_ray.agent.executor import profile_summary
    from pkb_ray.agent.ranks import RankExit, RanksOutcome

    base = {"rows": [{"name": "pull_reduce", "calls": 5, "self_us": 1019.4, "total_us": 1019.4}], "copies": [],
            "profiled_calls": 5}
    counted = {**base, "nvlink": {"tx_bytes": 83886080, "rx_bytes": 83886080}}
    missing = {**base, "nvlink": {"unavailable": "NVLink counters unavailable: nvmlInit_v2 returned 9"}}
    out = profile_summary(RanksOutcome([RankExit(0, 0, "", counted), RankExit(1, 0, "", missing)], False, 1.0),
                          "CUDA kernels and copies; NVLink bytes per rank", "bench", 60.0)
    assert out.ok, out.message
    assert (out.ranks[0].nvlink_tx_bytes, out.ranks[0].nvlink_rx_bytes, out.ranks[0].nvlink_note) == \
        (83886080, 83886080, "")
    assert out.ranks[1].nvlink_tx_bytes is None and "nvmlInit_v2 returned 9" in out.ranks[1].nvlink_note
    for bad in (1.5e9, -1, 1 << 70, "8e7", True):
        forged = {**base, "nvlink": {"tx_bytes": bad, "rx_bytes": 0}}
        out = profile_summary(RanksOutcome([RankExit(0, 0, "", counted), RankExit(1, 0, "", forged)], False, 1.0),
                              "CUDA kernels and copies; NVLink bytes per rank", "bench", 60.0)
        assert not out.ok and "rank 1: its profile report is malformed" in out.message, (bad, out)


def test_a_node_without_nvml_says_why_it_has_no_nvlink_counters():
    """On a machine with no NVIDIA driver (CI), the profile's NVLink counters are a reason, not
    an error that fails the rank."""
    import shutil

    from pkb_ray.engine.worker.nvlink_counters import open_counters

    if shutil.which("nvidia-smi"):
        pytest.skip("this machine has an NVIDIA driver: the GPU tool episode checks the counters")
    why = open_counters(0)
    assert isinstance(why, str) and why.startswith("NVLink counters unavailable: "), why


def test_a_profile_reports_the_counters_difference_or_why_not():
    """What a rank's profile says of NVLink from two readings: the bytes between them; the
    reason where a reading failed; never a negative count (a reset or a wrap)."""
    from pkb_ray.engine.worker.nvlink_counters import LinkBytes, nvlink_delta

    assert nvlink_delta("no NVML", LinkBytes(10, 20), LinkBytes(1034, 2068)) == {"tx_bytes": 1024, "rx_bytes": 2048}
    assert nvlink_delta("no NVML", "NVLink counters unavailable: x", LinkBytes(1, 1)) == \
        {"unavailable": "NVLink counters unavailable: x"}
    assert "went backwards" in nvlink_delta("no NVML", LinkBytes(5000, 0), LinkBytes(4, 0))["unavailable"]
