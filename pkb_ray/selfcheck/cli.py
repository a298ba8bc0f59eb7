"""`pkb problems check --world-size N [--device cpu|cuda] [--ids a,b ...]`: the suite audit
(selfcheck/audit), added to the problems command of pkb_ray/problems/cli.py (which lists
and covers the suite).

    pkb problems check --world-size 2                      gloo ranks on this machine's CPUs
    pkb problems check --device cuda --world-size 2 --out DIR
    pkb problems check --device cuda --world-size 2 --source pkb:/path/to/ParallelKernelBench
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time

from pkb_ray.problems import cli as problems_cli

DEFAULT_TIMEOUT_S = {"cpu": 120.0, "cuda": 180.0}
DEFAULT_TRUTH_LIMIT_S = {"cpu": 30.0, "cuda": 6.0}
"""truth.py's time per problem and rank: written for small sizes, some loop in Python over
tokens or nodes, which at bench sizes takes minutes; the audit of the suite must take few."""


def register(subparsers: argparse._SubParsersAction) -> None:
    """`pkb problems` with every subcommand: list and coverage from problems/cli.py, check here."""
    sub = problems_cli.register(subparsers)
    ck = sub.add_parser("check", help="audit the references in rank processes (CPU/gloo or one GPU per rank)")
    ck.add_argument("--world-size", type=int, required=True)
    ck.add_argument("--device", choices=["cpu", "cuda"], default="cpu",
                    help="cpu: gloo ranks at the small size; cuda: one process per GPU, NCCL, the bench size")
    ck.add_argument("--ids", nargs="*", default=None, metavar="ID[,ID...]",
                    help="problem ids, separated by spaces or commas (default: all)")
    ck.add_argument("--source", default="builtin", help="builtin | DIR | pkb:/path/to/checkout")
    ck.add_argument("--size", choices=["small", "bench"], default=None,
                    help="the size audited (default: bench on cuda, small on cpu)")
    ck.add_argument("--seeds", type=int, default=3, help="seeds compared with truth.py (at least 2)")
    ck.add_argument("--truth-limit-s", type=float, default=None, metavar="S",
                    help="truth.py's time for all seeds of one problem (default: 30 cpu, 6 cuda)")
    ck.add_argument("--problem-timeout", type=float, default=None, metavar="S",
                    help="seconds per problem before its group is killed (default: 120 cpu, 180 cuda)")
    ck.add_argument("--budget-s", type=float, default=0.0, metavar="S",
                    help="start no problem after this many seconds (0: no limit)")
    ck.add_argument("--no-profiler", action="store_true", help="skip torch.profiler (CUPTI) on cuda")
    ck.add_argument("--reasons", metavar="YAML", help="written reasons accepting findings: "
                    "{problem: {finding kind or '*': reason}}; added to the suite's own "
                    "(problems/audit_reasons.yaml, read for --source builtin), replacing a reason kind by kind")
    ck.add_argument("--no-shipped-reasons", action="store_true",
                    help="leave out problems/audit_reasons.yaml: every finding shows as open")
    ck.add_argument("--strict", action="store_true", help="exit 1 on open findings, not only on failures")
    ck.add_argument("--json", action="store_true", help="print the audit as JSON instead of the table")
    ck.add_argument("--out", metavar="DIR", help="also write audit_<device>_ws<N>.md and .json there")
    ck.add_argument("--tag", default="", help="suffix of the --out file names")
    ck.add_argument("--cache-dir", default="~/.cache/pkb_ray", help="where the hardware profile is cached")
    ck.set_defaults(handler=_check)


def split_ids(raw: list[str] | None) -> list[str] | None:
    """`--ids a b,c` -> [a, b, c]; None (all problems) when none are given."""
    ids = [i for chunk in raw or [] for i in chunk.split(",") if i.strip()]
    return [i.strip() for i in ids] or None


def _command(args: argparse.Namespace) -> str:
    """The command line that reproduces this audit (its options that differ from the defaults)."""
    words = ["pkb", "problems", "check", "--world-size", str(args.world_size)]
    for flag, value, default in (("--device", args.device, "cpu"), ("--source", args.source, "builtin"),
                                 ("--size", args.size, None), ("--seeds", args.seeds, 3),
                                 ("--truth-limit-s", args.truth_limit_s, None),
                                 ("--problem-timeout", args.problem_timeout, None), ("--budget-s", args.budget_s, 0.0),
                                 ("--reasons", args.reasons, None), ("--out", args.out, None), ("--tag", args.tag, "")):
        if value != default:
            words += [flag, str(value)]
    if args.ids:
        words += ["--ids", ",".join(split_ids(args.ids) or [])]
    words += [flag for flag, on in (("--no-profiler", args.no_profiler), ("--no-shipped-reasons",
                                    args.no_shipped_reasons), ("--strict", args.strict), ("--json", args.json)) if on]
    return " ".join(shlex.quote(w) for w in words)


def _check(args: argparse.Namespace) -> int:
    from pkb_ray.selfcheck.audit import AuditPlan, audit_problems, load_reasons, merge_reasons, shipped_reasons_path
    from pkb_ray.selfcheck.audit import report

    if args.seeds < 2:
        raise SystemExit("--seeds must be at least 2 (two seeds tell whether inputs change with the seed)")
    size = args.size or ("bench" if args.device == "cuda" else "small")
    plan = AuditPlan(device=args.device, size=size, seeds=tuple(1234 + 3087 * k for k in range(args.seeds)),
                     profiler=not args.no_profiler,
                     truth_limit_s=args.truth_limit_s or DEFAULT_TRUTH_LIMIT_S[args.device])
    files = [] if args.no_shipped_reasons or args.source != "builtin" else [str(shipped_reasons_path())]
    files += [args.reasons] if args.reasons else []
    try:
        reasons = {}
        for path in files:
            reasons = merge_reasons(reasons, load_reasons(path, args.world_size))
    except (OSError, ValueError) as exc:
        print(f"pkb problems check: {exc}", file=sys.stderr)
        return 2
    meta = {"command": _command(args), "device": args.device, "world_size": args.world_size, "size": size,
            "source": args.source, "tag": args.tag, "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "reasons": files}
    done: list = []
    t0 = time.monotonic()
    machine = {"machine": "?"}

    def progress(audit) -> None:
        done.append(audit)
        figure = f"{audit.reference_ms:.4g} ms" if audit.reference_ms is not None else ""
        print(f"[{len(done)}] {audit.problem:32s} {report.STATUS.get(audit.status, audit.status):4s} "
              f"{audit.seconds:6.1f}s {figure:>12s} {len(audit.open_findings)} findings "
              f"({time.monotonic() - t0:.0f} s)", file=sys.stderr, flush=True)
        if args.out:
            report.write(args.out, done, {**meta, **machine, "seconds": round(time.monotonic() - t0, 1),
                                          "in_progress": True})

    timeout = args.problem_timeout or DEFAULT_TIMEOUT_S[args.device]
    try:
        result = audit_problems(args.world_size, plan, args.source, split_ids(args.ids), problem_timeout_s=timeout,
                                budget_s=args.budget_s, reasons=reasons, cache_dir=args.cache_dir,
                                on_start=lambda m: machine.update(machine=m), on_audit=progress)
    except ValueError as exc:
        print(f"pkb problems check: {exc}", file=sys.stderr)
        return 2
    meta.update(machine=result.machine, seconds=round(result.seconds, 1), notes=result.notes)
    if args.out:
        md, js = report.write(args.out, result.audits, meta)
        print(f"wrote {md} and {js}", file=sys.stderr)
    if args.json:
        print(json.dumps(report.to_json(result.audits, meta), indent=1))
    else:
        report.print_table(result.audits, args.device, args.world_size)
    print(report.summary_line(result.audits, args.world_size, result.seconds), file=sys.stderr)
    fails = sum(not a.ok for a in result.audits)
    findings = sum(bool(a.open_findings) for a in result.audits)
    return 1 if fails or (args.strict and findings) else 0
