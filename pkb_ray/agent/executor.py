"""Runs one tool call through the engine: evaluate() for check, benchmark and submit; the
engine's sandbox (ranks.py) for profile and run.

`evaluate_fn` is the seam for the cluster: today engine.evaluate in this process; a node
actor's `evaluate.remote` (a queued evaluation task like any other) later.
"""

from __future__ import annotations

import base64
import dataclasses
import io
import os
import time
from pathlib import Path
from typing import Callable

from pkb_ray.agent.config import AgentConfig
from pkb_ray.agent.ranks import RankJob, RanksOutcome, run_on_ranks
from pkb_ray.agent.redact import redact, tail, trim_log
from pkb_ray.agent.tools import (EvalSummary, ProfileRow, ProfileSummary, RankOutput, RankProfile, RunSummary,
                                 Tool, ToolOutcome, ToolRequest)
from pkb_ray.engine.build import BuildResult
from pkb_ray.engine.request import EvalRequest
from pkb_ray.records import EvalResult, to_plain

EvaluateFn = Callable[[EvalRequest, "BuildResult | None"], EvalResult]
LOG_CHARS = 2500


def _engine_evaluate(req: EvalRequest, build: BuildResult | None) -> EvalResult:
    from pkb_ray.engine import evaluate

    return evaluate(req, build=build)


def execute_on_node(evaluate_fn: EvaluateFn, gpus: tuple[int, ...] | None, req: ToolRequest,
                    base: EvalRequest, cfg: AgentConfig, build: BuildResult | None = None) -> ToolOutcome:
    """One tool call on a node evaluator, handed to it as the tool of its `run_tool`
    (modes/tools.py): the node gives its `evaluate` and its GPUs."""
    return ToolExecutor(base, cfg, evaluate_fn=evaluate_fn, gpus=gpus).execute(req, build)


class ToolExecutor:
    def __init__(self, base: EvalRequest, cfg: AgentConfig, evaluate_fn: EvaluateFn | None = None,
                 gpus: tuple[int, ...] | None = None) -> None:
        """`base`: the request the cell's final answer is evaluated with (zero-shot's)."""
        self.base = base
        self.cfg = cfg
        self.evaluate_fn = evaluate_fn or _engine_evaluate
        self.gpus = gpus
        self._problem = None

    def execute(self, req: ToolRequest, build: BuildResult | None = None) -> ToolOutcome:
        """`build`: the module's prebuild from a CPU worker (a sweep's build stage); None
        builds it here when the device needs one."""
        t0 = time.monotonic()
        if req.tool in (Tool.CHECK, Tool.BENCHMARK, Tool.SUBMIT):
            out = self._evaluate(req, build)
        elif req.tool is Tool.PROFILE:
            out = self._profile(req, build)
        else:
            out = self._run(req.text)
        out.wall_s = time.monotonic() - t0
        return out

    # -- through evaluate() ------------------------------------------------------------
    def request_for(self, req: ToolRequest) -> EvalRequest:
        b = dataclasses.replace(self.base, candidate_source=req.text,
                                cell_id=f"{self.base.cell_id}#{req.tool.value}")
        if req.tool is Tool.CHECK:
            return dataclasses.replace(b, size=self.cfg.check_size).with_eval(trials=self.cfg.check_trials,
                                                                              time_candidates=False)
        if req.tool is Tool.BENCHMARK:
            return dataclasses.replace(b, size=self.cfg.benchmark_size).with_eval(time_candidates=True)
        return b  # submit: exactly the zero-shot request

    def _built(self, ereq: EvalRequest, build: BuildResult | None) -> BuildResult | None:
        """The module's build on cuda: the one given (a sweep's CPU build stage) or made here."""
        if build is not None or ereq.device != "cuda":
            return build
        from pkb_ray.engine.build import prebuild

        ev = ereq.eval
        return prebuild(ereq.candidate_source, ev.torch_cuda_arch_list, ev.cache_dir,
                        device="cuda", sandbox_mode=ev.sandbox.mode, sandbox_user=ev.sandbox.user)

    def _evaluate(self, req: ToolRequest, build: BuildResult | None) -> ToolOutcome:
        ereq = self.request_for(req)
        res = self.evaluate_fn(ereq, self._built(ereq, build))
        return outcome_of_evaluation(req.tool, res, device_s=res.node_seconds * ereq.eval.world_size)

    # -- through the sandbox ---------------------------------------------------------------
    def _cache_dirs(self) -> list[str]:
        return [str(Path(self.base.eval.cache_dir).expanduser().resolve())]

    def _run(self, script: str) -> ToolOutcome:
        b = self.base
        job = RankJob("script", b.eval.world_size, b.device, self.cfg.run_timeout_s, {"script.py": script})
        o = run_on_ranks(job, b.eval.sandbox, self._cache_dirs(), self.gpus, self.cfg.output_chars)
        ranks = [RankOutput(r.rank, r.exit_code, redact(tail(r.output, self.cfg.output_chars))) for r in o.ranks]
        ok = not o.timed_out and all(r.exit_code == 0 for r in o.ranks)
        msg = (f"stopped at the time limit of {self.cfg.run_timeout_s:g} s" if o.timed_out
               else redact(o.sandbox_error))
        return ToolOutcome(RunSummary(ok, o.timed_out, self.cfg.run_timeout_s, ranks, msg),
                           device_s=o.wall_s * b.eval.world_size)

    def problem(self):
        if self._problem is None:
            from pkb_ray.problems import load_problem

            self._problem = load_problem(self.base.problems_source, self.base.problem_id)
        return self._problem

    def _inputs_files(self) -> dict[str, str]:
        """Each rank's inputs at the benchmark size, made here (fresh random seed: nothing
        the judges use) and handed in as files: the sandbox sees no problem directory."""
        import torch

        seed = int.from_bytes(os.urandom(4), "little")
        files = {}
        for r in range(self.base.eval.world_size):
            buf = io.BytesIO()
            torch.save(self.problem().make_inputs(r, self.base.eval.world_size, seed, self.cfg.benchmark_size, "cpu"), buf)
            files[f"inputs_rank{r}.b64"] = base64.b64encode(buf.getvalue()).decode()
        return files

    def _profile(self, req: ToolRequest, build: BuildResult | None) -> ToolOutcome:
        """On cuda the module is built first, like check's (a compile inside the ranks would
        spend the tool's time limit, and the node, on nvcc); a failed build is answered as
        check answers it."""
        b = self.base
        build = self._built(dataclasses.replace(b, candidate_source=req.text), build)
        if build is not None and not build.ok:
            res = self.evaluate_fn(self.request_for(req), build)  # ends at the build: nothing starts
            return outcome_of_evaluation(req.tool, res, device_s=0.0)
        files = {"candidate.py": req.text, **self._inputs_files()}
        job = RankJob("profile", b.eval.world_size, b.device, self.cfg.run_timeout_s, files, self.cfg.profile_calls,
                      build.extensions_dir if build is not None else "")
        o = run_on_ranks(job, b.eval.sandbox, self._cache_dirs(), self.gpus, LOG_CHARS)
        measures = ("CUDA kernels and copies; NVLink bytes per rank" if b.device == "cuda"
                    else "CPU ops (no GPU on this node)")
        return ToolOutcome(profile_summary(o, measures, self.cfg.benchmark_size, self.cfg.run_timeout_s),
                           device_s=o.wall_s * b.eval.world_size)


def outcome_of_evaluation(tool: Tool, res: EvalResult, device_s: float, wall_s: float = 0.0) -> ToolOutcome:
    """check, benchmark or submit's outcome from the engine's result (submit's is the
    episode's final answer)."""
    return ToolOutcome(summarize(res, timed=tool in (Tool.BENCHMARK, Tool.SUBMIT)), device_s=device_s, wall_s=wall_s,
                       evaluation=res, final=to_plain(res) if tool is Tool.SUBMIT else None)


def _rank_profile(rank: int, report: object) -> RankProfile | None:
    """The rank's profile_rank<r>.json as typed rows; None when it is not what agent_rank
    writes (the sandbox's code can write anything there)."""
    def rows(key: str, most: int) -> list[ProfileRow]:
        return [ProfileRow(str(x["name"])[:200], int(x["calls"]), float(x["self_us"]), float(x["total_us"]))
                for x in report.get(key, [])[:most]]  # type: ignore[union-attr]

    def link_bytes(key: str) -> int | None:
        v = (report.get("nvlink") or {}).get(key)  # type: ignore[union-attr]
        if v is None:
            return None
        if type(v) is not int or not 0 <= v < 1 << 62:
            raise ValueError(f"nvlink {key}: {v!r}")
        return v

    try:
        prof = RankProfile(rank, rows("rows", 12), rows("copies", 8), int(report.get("profiled_calls", 0)))  # type: ignore[union-attr]
        prof.nvlink_tx_bytes, prof.nvlink_rx_bytes = link_bytes("tx_bytes"), link_bytes("rx_bytes")
        prof.nvlink_note = str((report.get("nvlink") or {}).get("unavailable", ""))[:300]  # type: ignore[union-attr]
        return prof
    except Exception:  # noqa: BLE001 - anything the sandbox wrote (inf, 400-digit ints, ...) fails the rank
        return None


def profile_summary(o: RanksOutcome, measures: str, size: str, limit_s: float) -> ProfileSummary:
    ranks, failed = [], []
    for r in o.ranks:
        prof = _rank_profile(r.rank, r.report) if r.report is not None and r.exit_code == 0 else None
        if prof is None:
            why = (f"exit {r.exit_code}" if r.exit_code is not None else "no exit") if r.exit_code != 0 or \
                r.report is None else "its profile report is malformed"
            failed.append(f"rank {r.rank}: {why}"
                          + (f"\n{redact(tail(r.output, LOG_CHARS))}" if r.output.strip() else ""))
            continue
        ranks.append(prof)
    msg = f"stopped at the time limit of {limit_s:g} s. " if o.timed_out else ""
    msg += "\n".join(failed) or redact(o.sandbox_error)
    return ProfileSummary(not failed and not o.timed_out and bool(ranks), measures, ranks, msg.strip(), size)


def summarize(res: EvalResult, timed: bool) -> EvalSummary:
    """The engine's verdict as a model should see it: classes, numbers and trimmed logs; no
    sandbox description, fingerprint or evidence (they name the harness's machinery)."""
    s = EvalSummary(correct=res.correct, failure=res.failure.value if res.failure else None,
                    message=redact(res.message), failing_rank=res.failing_rank,
                    failing_trial=res.failing_trial, max_abs_error=res.max_abs_error,
                    flags=list(res.flags), size=res.size, trials=res.trials)
    if res.build_log and not res.correct:
        s.compiler_output = redact(trim_log(res.build_log, LOG_CHARS))
    if res.log and not res.correct and res.failure is not None and res.failure.value not in ("incorrect", "nan"):
        s.log_tail = redact(trim_log(res.log, LOG_CHARS))
    if timed:
        s.candidate_ms, s.reference_ms, s.speedup = res.candidate_ms, res.reference_ms, res.speedup
        s.speedup_ci_low, s.speedup_ci_high = res.speedup_ci_low, res.speedup_ci_high
        s.roofline_fraction = res.roofline_fraction
    return s
