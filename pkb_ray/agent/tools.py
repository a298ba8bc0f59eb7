"""The agent's tools as typed requests and results, and their OpenAI function schemas.

A result's `model_view()` is what the model is shown (compact JSON, redacted, a few KB at
most); the whole record, with its device-seconds and wall time, goes to the journal.
"""

from __future__ import annotations

import enum
import json
from dataclasses import asdict, dataclass, field
from typing import Any

from pkb_ray.records import EvalResult


class Tool(str, enum.Enum):
    CHECK = "check"
    BENCHMARK = "benchmark"
    PROFILE = "profile"
    RUN = "run"
    SUBMIT = "submit"


@dataclass(frozen=True)
class ToolRequest:
    """One call: the tool and its single text argument (a module's source, or a script)."""

    tool: Tool
    text: str

    @property
    def argument(self) -> str:
        return "script" if self.tool is Tool.RUN else "source"


@dataclass
class EvalSummary:
    """What check, benchmark and submit return: the engine's verdict, for a model to read."""

    correct: bool
    failure: str | None = None
    """parse_error | forbidden_api | compile_error | runtime_error | timeout | incorrect | nan | ..."""
    message: str = ""
    failing_rank: int | None = None
    failing_trial: int | None = None
    max_abs_error: float | None = None
    compiler_output: str = ""
    log_tail: str = ""
    flags: list[str] = field(default_factory=list)
    size: str = ""
    trials: int = 0
    candidate_ms: float | None = None
    reference_ms: float | None = None
    speedup: float | None = None
    speedup_ci_low: float | None = None
    speedup_ci_high: float | None = None
    roofline_fraction: float | None = None


@dataclass
class ProfileRow:
    name: str
    calls: int
    self_us: float
    """Time in this op itself, summed over the profiled calls (device time on cuda, CPU
    time on cpu)."""
    total_us: float


@dataclass
class RankProfile:
    rank: int
    rows: list[ProfileRow] = field(default_factory=list)
    """The ops with the most self time, most first (at most 12)."""
    copies: list[ProfileRow] = field(default_factory=list)
    """Memcpy / memset entries (cuda only)."""
    profiled_calls: int = 0
    nvlink_tx_bytes: int | None = None
    nvlink_rx_bytes: int | None = None
    """NVLink payload bytes this rank's GPU sent / received over the profiled calls (NVML's
    counters, engine/worker/nvlink_counters.py); None where the node has none."""
    nvlink_note: str = ""
    """Why there are no NVLink bytes (cuda), else empty."""


@dataclass
class ProfileSummary:
    ok: bool
    measures: str = ""
    """What the times are: "CUDA kernels and copies" or "CPU ops (no GPU on this node)"."""
    ranks: list[RankProfile] = field(default_factory=list)
    message: str = ""
    size: str = ""


@dataclass
class RankOutput:
    rank: int
    exit_code: int | None
    """None: killed (time limit) or never reported."""
    output: str = ""


@dataclass
class RunSummary:
    ok: bool
    """Every rank exited 0 within the time limit."""
    timed_out: bool = False
    time_limit_s: float = 0.0
    ranks: list[RankOutput] = field(default_factory=list)
    message: str = ""


ToolResult = EvalSummary | ProfileSummary | RunSummary


@dataclass
class ToolOutcome:
    """A finished tool call: its result and what it cost."""

    result: ToolResult | None
    error: str = ""
    """Why nothing ran (bad arguments, unknown tool): shown to the model instead."""
    wall_s: float = 0.0
    device_s: float = 0.0
    """world_size x wall of the evaluation or run (GPU-seconds on cuda)."""
    final: dict[str, Any] | None = None
    """submit only: the full EvalResult (plain), recorded as the cell's evaluation."""
    evaluation: EvalResult | None = None
    """check, benchmark and submit: the engine's whole result (a sweep records each step's)."""

    def model_view(self) -> str:
        if self.result is None:
            return json.dumps({"error": self.error})
        d = {k: v for k, v in asdict(self.result).items() if v not in (None, "", [])}
        return json.dumps(d, sort_keys=True)


_SOURCE = {"type": "object", "properties": {"source": {
    "type": "string", "description": "The complete candidate module defining solution(...)."}},
    "required": ["source"]}
_DESCRIPTIONS = {
    Tool.CHECK: ("Compile the module and run correctness trials at the small size on every rank. "
                 "Returns the verdict, compiler output, and which rank and trial failed."),
    Tool.BENCHMARK: ("The full evaluation at the bench size: correctness, time per call, speedup "
                     "over the reference with its 95% interval, and roofline fraction."),
    Tool.PROFILE: ("Run the module under torch.profiler on every rank at the bench size; returns, "
                   "per rank, the ops (kernels and copies on GPUs) with the most time, and on GPUs the "
                   "NVLink bytes each rank's GPU sent and received (where the node counts them)."),
    Tool.RUN: ("Run a Python script on every rank of the problem's world size (torch.distributed "
               "is initialised; RANK and WORLD_SIZE are set), with a time limit. Returns each "
               "rank's exit code and output. For experiments and micro-benchmarks."),
    Tool.SUBMIT: "Submit the final module. Ends the episode; it is evaluated like any candidate.",
}


def tool_schemas() -> list[dict[str, Any]]:
    """The tools in OpenAI's function-calling format."""
    out = []
    for tool in Tool:
        params = _SOURCE if tool is not Tool.RUN else {
            "type": "object", "properties": {"script": {"type": "string", "description": "Python source."}},
            "required": ["script"]}
        out.append({"type": "function", "function": {
            "name": tool.value, "description": _DESCRIPTIONS[tool], "parameters": params}})
    return out


class BadToolCall(ValueError):
    """A tool call the model made wrongly; its message is shown to the model."""


def parse_call(name: str, arguments: str) -> ToolRequest:
    try:
        tool = Tool(name)
    except ValueError:
        raise BadToolCall(f"unknown tool {name!r}; the tools are {', '.join(t.value for t in Tool)}") from None
    try:
        args = json.loads(arguments or "{}")
    except ValueError as e:
        raise BadToolCall(f"{name}: arguments are not JSON ({e})") from None
    key = "script" if tool is Tool.RUN else "source"
    if not isinstance(args, dict) or not isinstance(args.get(key), str) or not args[key].strip():
        raise BadToolCall(f"{name} takes one argument {key!r}: a non-empty string")
    return ToolRequest(tool, args[key])
