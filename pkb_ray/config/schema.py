"""Structured configs behind every `conf/` group.

Hydra merges each group's YAML into these dataclasses in struct mode, so an unknown key
or a wrongly typed value in a YAML file or on the command line fails at composition time
with a message naming the key. Value checks that types cannot express live in
`validate.py` and run before any work starts.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from omegaconf import MISSING


@dataclass
class ModelConfig:
    """One model API (or a pseudo-model that needs no API)."""

    name: str = MISSING
    """Short name used in cell ids and MLflow, e.g. `opus47`; equals the YAML file's stem."""
    provider: str = MISSING
    """Its candidate source (pkb_ray/generation/sources.py): `reference`, `expert`,
    `openai_compatible`, or a litellm provider: openai, anthropic, gemini, xai, ..."""
    model_id: str = ""
    """The litellm model id, e.g. `anthropic/claude-opus-4-7`. Empty for pseudo-models."""
    api_base: Optional[str] = None
    """Endpoint override, for OpenAI-compatible servers (vLLM, SGLang, llama.cpp)."""
    api_key_env: Optional[str] = None
    """Name of the environment variable holding the key. Keys never live in configs."""
    max_concurrency: int = 8
    """Requests in flight at once for this model."""
    rpm: Optional[int] = None
    """Requests per minute allowed by the provider; None = unlimited."""
    tpm: Optional[int] = None
    """Tokens per minute allowed by the provider; None = unlimited."""
    max_output_tokens: int = 32000
    temperature: Optional[float] = None
    """Sampling temperature; leave None for reasoning models that refuse it."""
    reasoning_effort: Optional[str] = None
    """low | medium | high for reasoning models that accept it."""
    extra_params: dict[str, Any] = field(default_factory=dict)
    """Further provider parameters passed through to litellm unchanged."""
    price_input_per_mtok: Optional[float] = None
    """USD per million input tokens; used when litellm does not know the model."""
    price_output_per_mtok: Optional[float] = None
    """USD per million output tokens; used when litellm does not know the model."""
    devices: list[str] = field(default_factory=lambda: ["cuda", "cpu"])
    """Devices its candidates can run on. A sweep on another device refuses the model at
    planning, with the reason, before anything runs (the experts' symmetric memory needs CUDA)."""
    request_timeout_s: float = 900.0
    """Wall-clock limit of one API call."""
    max_retries: int = 6
    """Retries of one call on rate limits, timeouts and server errors."""


@dataclass
class ProblemsConfig:
    """Which problems the sweep covers."""

    ids: list[str] = field(default_factory=list)
    """Problem ids; empty = every problem of the source."""
    source: str = "builtin"
    """`builtin` (this repo's problems/), a directory path, or `pkb:/path/to/ParallelKernelBench`."""
    cpu_ids: list[str] = field(default_factory=list)
    """Used instead of `ids` when the sweep evaluates on CPU (problems=auto, the default:
    the representative set, so a CPU self-check takes minutes, not 24); empty = `ids`."""


@dataclass
class ClusterConfig:
    """Where the Ray pipeline runs."""

    address: Optional[str] = None
    """None starts a local Ray instance; `auto` or `ray://host:port` joins a cluster."""
    num_cpus: Optional[int] = None
    """Logical CPUs for a local Ray instance; None = max(4, cores)."""
    cpu_evaluators: int = 1
    """Evaluator actors for eval.device=cpu (each runs world_size gloo ranks)."""
    evaluator_placement: str = "auto"
    """auto | gpu_node | cpu. gpu_node: one actor per GPU node holding all its GPUs."""
    node_gpus: Optional[int] = None
    """gpu_node: how many GPUs of each node this sweep's actor holds (None: all). Two sweeps
    on one Ray cluster (cluster.address) each hold a share, and Ray hands the shares out
    disjoint; with all of them, a second sweep's actor waits until the first one's ends. A
    share's results record co_tenancy None: the actor cannot see the other share's work."""
    share_nodes: bool = False
    """gpu_node: evaluate on each node's one shared actor (engine/node/shared_nodes.py), which
    every sweep of the cluster with share_nodes=true uses: its GPU groups go to whichever
    sweep's evaluation or tool call is ready, so no group idles while another sweep has work,
    and co_tenancy counts every sweep's neighbours. The first sweep starts it; it stays,
    holding the whole node, until the cluster's owner closes it (close_shared_evaluators)
    or the cluster stops. Not with node_gpus."""
    max_inflight_generations: int = 64
    """Generation requests in flight at once across all models."""
    max_queued_builds: int = 16
    """Built candidates waiting for an evaluator; bounds memory and wasted work."""
    node_type: str = "8xH100"
    """`<GPUs per node>x<GPU>`: the nodes a dry run (`--dry-run`) plans for, where no cluster
    is asked; a run reads its nodes from Ray. The estimate's per-evaluation seconds were
    measured on H100 and H200 nodes."""
    nodes: int = 1
    """How many such nodes a dry run plans for (its wall-clock estimate)."""


@dataclass
class TimingConfig:
    """How candidate and reference calls are timed (identically)."""

    warmup_ms: float = 50.0
    """Warm up by time, not by count."""
    min_calls: int = 20
    """Samples, not calls: a gated sample can be several calls back to back (batch_ms)."""
    max_calls: int = 1000
    target_rel_ci: float = 0.02
    """Stop sampling once the speedup's relative 95% half-width (the median of the paired
    per-sample ratios, reference over candidate) is below this. 0.02: about what cuda's
    spread between evaluations adds to every interval (1.96 x 0.010, timing/stats.py), which
    no number of samples narrows; at 0.015 the allreduce expert at 8192x8192 took 60-90
    samples (1.7-2.6 s) where 20-30 reached 0.02 (H100). cpu evaluations end at
    max_timing_s before either (CPU self-check, 36 of 36)."""
    max_timing_s: float = 2.0
    """Wall-clock cap on the sampling loop of one evaluation (it stops at the interval above
    first, usually within a few hundred samples)."""
    gate: bool = True
    """cuda: hold each timed call behind a GPU-side gate until every rank has queued all of
    it (engine/wire/gate.py), so launch overhead and rank skew stay out of the times."""
    batch_ms: float = 1.0
    """Gated: queue calls back to back behind one gate, about this much GPU time per sample
    (at most max_batch_calls); a sample is the batch's time per call. 0 = one call per sample."""
    cpu_batch_ms: float = 10.0
    """The same on cpu, where a sample of about 1 ms is a few calls against a floor of 0.5-1.5
    ms. The CPU self-check on a 2-core CPU machine, geomean and intervals holding 1.0 of 12:
    about 1 ms: 0.947, 0.946, 0.964 (32 of 36); about 10 ms: 1.004, 1.035, 0.979 (35 of 36),
    then 0.989, 0.935, 1.005 (29 of 36). Less biased, not yet within 3%."""
    max_batch_calls: int = 64
    """Gated: the most calls behind one gate. 256 calls of the allreduce expert at 1024x1024
    fill CUDA's launch queue (the gate expires, 7x slower; H100); a batch that expires is cut
    to what holds (judge/timing/expiries.py) either way. The arena holds this many calls
    where the GPU's memory allows."""
    max_foreign_cpu: float = 0.2
    """cpu: the share of the host's CPU capacity that processes other than the evaluation's
    may use during its timing phase before the result says `unmeasurable` (engine/judge/
    timing/conditions.py says why). 1.0 accepts any load, and figures that are draws of it."""
    gate_timeout_ms: float = 100.0
    """A gate not opened by then lets the call through and the callable is timed ungated
    (it waits on the GPU from the host, e.g. .item())."""


@dataclass
class TimeoutConfig:
    """Wall-clock limit of each phase of one evaluation, in seconds."""

    start_s: float = 60.0
    """Process start and process-group init."""
    load_s: float = 180.0
    """Importing the candidate (includes load_inline when not prebuilt)."""
    trial_s: float = 60.0
    """One correctness trial on all ranks."""
    timing_s: float = 120.0
    """The whole timing phase."""


@dataclass
class SandboxConfig:
    """Where candidate code runs (pkb_ray/engine/launch/)."""

    mode: str = "auto"
    """auto | bwrap+uid | bwrap | uid | none. auto = the strongest this machine allows; every
    result names the one it ran in (`sandbox`), with what was missing for a stronger one."""
    user: str = "pkb-sandbox"
    """The unprivileged user candidates run as (scripts/install.sh makes it when run as root)."""
    bwrap_path: str = ""
    """bubblewrap's path; empty = $PKB_BWRAP, then PATH."""


@dataclass
class EvalConfig:
    """How candidates are evaluated."""

    device: str = "auto"
    """auto | cuda | cpu. auto = cuda when the cluster has GPU nodes, else cpu with a notice."""
    world_size: int = 2
    """Ranks (GPUs) per evaluation."""
    size: str = "auto"
    """auto | small | bench. auto = bench on cuda, small on cpu."""
    trials: int = 5
    """Correctness trials, each with fresh random inputs (different seeds)."""
    guard: bool = True
    """NCCL-free guard while the candidate runs. Off for sources that say so (`reference`:
    its candidates use collectives by definition; generation/sources.py)."""
    time_candidates: bool = True
    timing: TimingConfig = field(default_factory=TimingConfig)
    timeouts: TimeoutConfig = field(default_factory=TimeoutConfig)
    cache_dir: str = "~/.cache/pkb_ray"
    """Reference outputs/timings, hardware profile and prebuilt extensions."""
    torch_cuda_arch_list: str = "9.0"
    """TORCH_CUDA_ARCH_LIST for prebuilds and ranks; must match or the cache rebuilds."""
    sandbox: SandboxConfig = field(default_factory=SandboxConfig)
    exclusive: bool = False
    """One evaluation per node at a time (every GPU of it idle but the evaluation's), for
    publication-grade timing. Off (the default): a node runs one evaluation per group of
    world_size GPUs at once, each result recording its co-tenancy (README, GPU groups)."""
    transport: str = "auto"
    """How inputs and outputs cross between a judge and its worker: auto | cuda | host.
    cuda = device memory exported as a file descriptor (no PCIe copy; auto picks it on
    GPUs), host = shared host memory (the worker stages to its GPU)."""


@dataclass
class TrackingConfig:
    """MLflow tracking."""

    uri: str = "sqlite:///mlflow.db"
    """MLflow tracking URI; a relative sqlite path is relative to the launch directory."""
    enabled: bool = True


class AgentConfigError(ValueError):
    """An agent setting that cannot be used; the message names the key."""


@dataclass
class AgentLimits:
    """Per cell (one episode). The first limit reached ends the episode with its name."""

    tool_calls: int = 30
    """Tool calls of any kind (submit included)."""
    model_calls: int = 40
    """Model requests (a reply without a tool call is nudged once more and counts here)."""
    wall_s: float = 3600.0
    """Model latency plus tool wall time, summed over steps (time between a kill and the
    re-run does not count: the journal keeps each step's own duration)."""
    gpu_s: float = 1800.0
    """Device-seconds of tools: world_size x wall of each tool call (rank-seconds on CPU)."""
    usd: float = 5.0
    """Model spend, plus gpu_s priced at `gpu_usd_per_hour`."""
    gpu_usd_per_hour: float = 0.0
    """What one GPU-hour costs, for the dollar limit (0 = tools are free)."""


@dataclass
class AgentConfig:
    """The tool agent: `pkb agent run ... agent.KEY=VALUE`, or a sweep's `mode=tools mode.tools.KEY=VALUE`."""

    limits: AgentLimits = field(default_factory=AgentLimits)
    check_size: str = "small"
    """The problem size `check` runs at."""
    check_trials: int = 2
    """Correctness trials of one `check` (the submission runs the sweep's eval.trials)."""
    benchmark_size: str = "bench"
    """The problem size `benchmark` and `profile` run at."""
    profile_calls: int = 5
    """Profiled calls per rank (after two warm-up calls)."""
    run_timeout_s: float = 60.0
    """Wall-clock limit of one `run(script)` or `profile` on all ranks."""
    output_chars: int = 3000
    """Per rank, the tail of a script's output returned to the model."""
    tool_models: list[str] = field(default_factory=list)
    """Model names declared tool-capable where litellm cannot know (an openai_compatible
    endpoint serving a model with tool calling on, e.g. vLLM --enable-auto-tool-choice)."""

    def __post_init__(self) -> None:
        if self.check_size not in ("small", "bench"):
            raise AgentConfigError(f"agent.check_size must be small or bench, got {self.check_size!r}")
        if self.benchmark_size not in ("small", "bench"):
            raise AgentConfigError(f"agent.benchmark_size must be small or bench, got {self.benchmark_size!r}")
        for name in ("check_trials", "profile_calls"):
            if getattr(self, name) < 1:
                raise AgentConfigError(f"agent.{name} must be >= 1, got {getattr(self, name)}")
        if self.run_timeout_s <= 0:
            raise AgentConfigError(f"agent.run_timeout_s must be > 0, got {self.run_timeout_s}")
        lim = self.limits
        for name in ("tool_calls", "model_calls", "wall_s", "gpu_s", "usd"):
            if getattr(lim, name) <= 0:
                raise AgentConfigError(f"agent.limits.{name} must be > 0, got {getattr(lim, name)}")


@dataclass
class ModeConfig:
    """Zero-shot, feedback-agent or tool-agent generation."""

    name: str = "zeroshot"
    """zeroshot | agent (feedback: evaluate, tell, revise) | tools (the tool-using agent)."""
    turns: int = 1
    """Agent mode: at most this many generate-evaluate turns per cell."""
    target_speedup: float = 1.0
    """Agent mode: stop once a correct turn beats the reference by this factor."""
    tools: AgentConfig = field(default_factory=AgentConfig)
    """Tools mode: the episode's limits and how each tool runs."""


@dataclass
class GenerationConfig:
    """The generate stage."""

    cache_dir: str = "kernels_cache"
    """Write-through store of every prompt, response and candidate."""
    replay_only: bool = False
    """Evaluate cached generations only; never call an API."""


@dataclass
class SweepSection:
    name: Optional[str] = None
    """The sweep's name: its MLflow experiment and its directory under `sweep.root`. None:
    named from what it runs and the settings that change a cell's result
    (`reference-cpu-1a2b3c`), so commands with different settings never share a leaderboard
    and the same command again resumes its own sweep."""
    root: str = "sweeps"
    """Where per-sweep directories (journal, leaderboard) live."""
    fresh: bool = False
    """Start over: archive the journal and ignore recorded cells."""
    progress: bool = True
    """Live progress display."""


@dataclass
class RootConfig:
    """`python sweep.py ...`: models x problems x attempts."""

    model: ModelConfig = field(default_factory=ModelConfig)
    models: Any = field(default_factory=list)
    """Several models by name: `models=[a,b]`, or `models=all` (every API model; also
    `[all, expert]`). Overrides `model` when set. Typed Any so that `models=all`, a string
    on the command line, composes as well as a list does."""
    attempts: int = 1
    """Independent attempts per (model, problem)."""
    turns: Optional[int] = None
    """Agent mode: shorthand for mode.turns, as in `python sweep.py mode=agent turns=10`."""
    budget_usd: Optional[float] = None
    """Stop new API calls once the sweep's spend reaches this."""
    problems: ProblemsConfig = field(default_factory=ProblemsConfig)
    cluster: ClusterConfig = field(default_factory=ClusterConfig)
    eval: EvalConfig = field(default_factory=EvalConfig)
    tracking: TrackingConfig = field(default_factory=TrackingConfig)
    mode: ModeConfig = field(default_factory=ModeConfig)
    generation: GenerationConfig = field(default_factory=GenerationConfig)
    sweep: SweepSection = field(default_factory=SweepSection)
