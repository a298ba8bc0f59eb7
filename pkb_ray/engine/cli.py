"""`pkb eval PROBLEM CANDIDATE.py`: evaluate one file locally (no Ray)."""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import sys
from pathlib import Path

from pkb_ray.engine.launch import exit_on_sigterm
from pkb_ray.problems.includes import read_candidate_file
from pkb_ray.records import to_plain


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("eval", help="evaluate one candidate file locally",
                              description=__doc__)
    p.add_argument("problem", help="problem id, e.g. allreduce")
    p.add_argument("candidate", type=Path, help="candidate .py defining solution(*inputs)")
    p.add_argument("--world-size", type=int, default=2)
    p.add_argument("--device", choices=["cpu", "cuda"], default=None,
                   help="default: cuda when torch sees GPUs, else cpu")
    p.add_argument("--size", choices=["small", "bench"], default=None,
                   help="default: bench on cuda, small on cpu")
    p.add_argument("--trials", type=int, default=5)
    p.add_argument("--no-guard", action="store_true", help="allow collectives (reference runs)")
    p.add_argument("--no-timing", action="store_true", help="correctness only")
    p.add_argument("--source", default="builtin", help="problems source (builtin, a directory, pkb:/path)")
    p.add_argument("--cache-dir", default="~/.cache/pkb_ray")
    p.add_argument("--arch-list", default="9.0", help="TORCH_CUDA_ARCH_LIST for prebuild and ranks")
    p.add_argument("--json", action="store_true", help="print the result as JSON on the last line")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from pkb_ray.config.schema import EvalConfig
    from pkb_ray.engine import EvalRequest, evaluate, prebuild
    exit_on_sigterm()  # a killed `pkb eval` removes its sandboxes too

    device = args.device
    if device is None:
        import torch
        device = "cuda" if torch.cuda.is_available() else "cpu"
    size = args.size or ("bench" if device == "cuda" else "small")
    try:
        source = read_candidate_file(args.candidate)  # expands `# pkb:include` lines
    except (OSError, ValueError) as e:
        print(f"pkb eval: cannot read {args.candidate}: {e}", file=sys.stderr)
        return 2
    refusal = _world_size_refusal(args.source, args.problem, args.world_size)
    if refusal:  # before anything is built or started
        print(f"pkb eval: {refusal}", file=sys.stderr)
        return 2
    settings = EvalConfig(world_size=args.world_size, trials=args.trials, guard=not args.no_guard,
                          time_candidates=not args.no_timing, cache_dir=args.cache_dir,
                          torch_cuda_arch_list=args.arch_list)
    req = EvalRequest(problem_id=args.problem, problems_source=args.source, candidate_source=source,
                      device=device, size=size, eval=settings, cell_id=f"cli/{args.problem}/{args.candidate.name}")
    build = prebuild(source, args.arch_list, args.cache_dir, device=device) if device == "cuda" else None
    res = evaluate(req, build=build)
    if args.json:
        d = to_plain(res)
        d.pop("log", None)
        d.pop("build_log", None)
        print(json.dumps(d, sort_keys=True))
    else:
        _print_human(res, guarded=not args.no_guard, problem=args.problem, candidate=str(args.candidate))
    return 0 if res.correct else 1


def _world_size_refusal(source: str, problem_id: str, world_size: int) -> str:
    """Why the problem does not run at `world_size` (asked for by name: test-only world sizes
    count), or '' when it does or cannot load (evaluate() reports that, classified)."""
    from pkb_ray.problems.common import ProblemLoadError
    from pkb_ray.problems.loader import load_problem

    try:
        problem = load_problem(source, problem_id)
    except ProblemLoadError:
        return ""
    return problem.spec.world_size_refusal(world_size, tests=True)


FIELD_NOTES = {
    "candidate_ms": "the median of the candidate's own samples",
    "reference_ms": "the median of the reference's own samples",
}
"""What a printed figure is, beside it: the two medians' ratio is not the speedup, which pairs
the samples taken side by side (a slower median beside a speedup above 1 is no contradiction)."""
SHOWN_ELSEWHERE = ("log", "build_log", "message", "correct", "failure", "evidence", "sandbox",
                   "speedup_ci_low", "speedup_ci_high")


def _print_human(res, guarded: bool, problem: str, candidate: str) -> None:
    """The verdict with its class and first line; the fields that say something, rounded and
    wrapped to the terminal; the candidate's log with each distinct traceback once (every
    rank raised the same one); and what to try next."""
    from pkb_ray.console import field_lines, terminal_width, wrap

    width = terminal_width()
    status = "CORRECT" if res.correct else f"FAILED ({res.failure.value if res.failure else '?'})"
    print(wrap(f"{status}: {_first_line(res.message)}", width=width))
    for f in dataclasses.fields(res):
        if f.name in SHOWN_ELSEWHERE:
            continue
        v = getattr(res, f.name)
        if f.name == "speedup" and v is not None:
            print("\n".join(field_lines("speedup", _speedup_text(res), width)))
        elif v not in (None, "", [], 0.0) or f.name in ("speedup", "candidate_ms"):
            note = f" ({FIELD_NOTES[f.name]})" if f.name in FIELD_NOTES and v is not None else ""
            print("\n".join(field_lines(f.name, v, width, note=note)))
    if res.sandbox:
        print("\n".join(field_lines("sandbox", sandbox_line(res.sandbox), width)))
    if res.evidence and (res.failure is not None and res.failure.value == "implausible" or res.flags):
        print("\n".join(field_lines("evidence", res.evidence, width)))  # what the verdict rests on
    if not res.correct and res.log:
        print("---- log (each distinct part once) ----")
        print(distinct_log(res.log)[-3000:])
    if res.failure is not None and res.failure.value == "forbidden_api" and guarded:
        print(wrap(f"hint: a reference calls torch.distributed collectives on purpose; to check one, "
                   f"turn the guard off: pkb eval {problem} {candidate} --no-guard", width=width))


def _speedup_text(res) -> str:
    """`1.26 [0.62, 1.59] (...)`: the figure, its interval, and which statistic it is."""
    from pkb_ray.console import readable

    low, high = res.speedup_ci_low, res.speedup_ci_high
    interval = f" [{readable(low, 3)}, {readable(high, 3)}]" if low is not None and high is not None else ""
    samples = getattr(res.timing, "samples", None)
    pairs = f"{samples} " if samples else ""
    return (f"{readable(res.speedup, 3)}{interval} (the median of the {pairs}paired per-sample ratios, "
            "reference time / candidate time" + (", with its 95% interval)" if interval else ")"))


def _first_line(message: str) -> str:
    return next((line for line in message.splitlines() if line.strip()), message)


SANDBOX_FACTS = ("; writes: ", "; network: ", "; nccl: ", "; bounds: ", "; gpus: ")


def sandbox_line(description: str) -> str:
    """`kind: what was missing for a stronger kind` as one calm line: the kind chosen, and
    why not stronger in brackets (it read like an error: "bwrap as pkb-sandbox fails: ...
    Permission denied", though the weaker kind was expected and fine)."""
    # What follows the kind and its note: facts of every kind (SandboxPlan.description,
    # node/evaluation._describe_sandbox).
    cut = min((description.find(k) for k in SANDBOX_FACTS if k in description), default=len(description))
    kind, _, why = description[:cut].partition(": ")
    line = kind if not why else f"{kind} (the strongest available here; not stronger because: {why})"
    return line + description[cut:]


def distinct_log(log: str) -> str:
    """The log's `==== rankN.log ====` parts and the part before them, each kept once: a
    part equal to one already kept, but for its rank numbers, is named, not repeated."""
    parts = re.split(r"^(==== .+ ====)$", log, flags=re.M)
    out = [parts[0].strip()] if parts[0].strip() else []
    seen = {re.sub(r"rank\d+", "rankN", parts[0].strip())}
    for header, body in zip(parts[1::2], parts[2::2]):
        key = re.sub(r"rank\d+", "rankN", body.strip())
        if key in seen:
            out.append(f"{header} (the same as above)")
        else:
            seen.add(key)
            out.append(f"{header}\n{body.strip()}")
    return "\n".join(out)
