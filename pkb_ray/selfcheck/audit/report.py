"""The audit's outputs: a terminal table that fits 100 columns (rich when it is installed,
plain text otherwise), and a markdown page and a JSON file for --out."""

from __future__ import annotations

import json
import math
from dataclasses import asdict
from pathlib import Path
from typing import Any

from pkb_ray.selfcheck.audit import verdict as v
from pkb_ray.selfcheck.audit.records import ProblemAudit

WIDTH = 100
STATUS = {"ok": "ok", "finding": "FIND", "FAIL": "FAIL", "skip": "skip"}


def _num(x: float | None, fmt: str) -> str:
    if x is None:
        return "-"
    if isinstance(x, float) and math.isinf(x):
        return "inf"
    return format(x, fmt)


def _columns(device: str) -> list[tuple[str, str]]:
    """(header, what it shows); the GPU-only figures are left out of a CPU table."""
    cols = [("problem", "problem id"), ("st", "ok | FIND (open findings) | FAIL | skip")]
    if device == "cuda":
        cols += [("ms", "median ms per call, slowest rank"), ("queue", "ms / ms with launches queued"),
                 ("busy", "GPU busy / call (profiler)"), ("roof", "roofline ms / ms"),
                 ("self", "even / odd calls")]
    cols += [("link", "NVLink bytes: counts / ledger"), ("hbm", "HBM bytes: counts / ledger"),
             ("flop", "FLOPs: counts / ledger (inf: the ledger sees none, e.g. the sums inside NCCL)"), ("err/tol", "reference vs truth.py over the tolerance"),
             ("F", "open findings")]
    return cols


def _cells(a: ProblemAudit, device: str) -> list[str]:
    row = [a.problem, STATUS.get(a.status, a.status)]
    if device == "cuda":
        row += [_num(a.reference_ms, ".4g"), _num(a.queued_ratio, ".2f"), _num(a.busy_fraction, ".2f"),
                _num(a.roofline_fraction, ".3f"), _num(a.self_ratio, ".3f")]
    row += [_num(a.ratios.get(r), ".2f") for r in v.RESOURCES]
    row += [_num(a.tolerance.get("err_over_tol"), ".2g"), str(len(a.open_findings)) if a.open_findings else ""]
    return row


def print_table(audits: list[ProblemAudit], device: str, world_size: int, console_file=None) -> None:
    """The table, then one line per finding and failure."""
    headers = [h for h, _ in _columns(device)]
    rows = [_cells(a, device) for a in audits]
    try:
        from rich.console import Console
        from rich.table import Table
    except ImportError:
        _plain(headers, rows, console_file)
    else:
        table = Table(box=None, padding=(0, 1), header_style="bold", pad_edge=False,
                      title=f"pkb problems check: world size {world_size}, {device}")
        for i, h in enumerate(headers):
            table.add_column(h, justify="left" if i < 2 else "right", no_wrap=True,
                             max_width=26 if i == 0 else None, overflow="ellipsis")
        for a, row in zip(audits, rows):
            style = {"FAIL": "red", "finding": "yellow"}.get(a.status)
            table.add_row(*row, style=style)
        Console(width=WIDTH, file=console_file).print(table)
    for line in detail_lines(audits):
        print(line, file=console_file)


def _plain(headers: list[str], rows: list[list[str]], out) -> None:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]
    widths[0] = min(widths[0], 26)
    for r in [headers, *rows]:
        cells = [(c[:widths[0] - 1] + "~" if i == 0 and len(c) > widths[0] else c) for i, c in enumerate(r)]
        print(" ".join(c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths))), file=out)


def detail_lines(audits: list[ProblemAudit]) -> list[str]:
    """`problem: FAIL ...`, `problem: warning: ...` and `problem: kind: text` lines, wrapped to WIDTH."""
    import textwrap

    out = []
    for a in audits:
        if a.status == "FAIL":
            out += textwrap.wrap(f"{a.problem}: FAIL {a.message}", WIDTH, subsequent_indent="    ")
        for w in a.warnings:  # what an upstream problem does that a native one may not
            out += textwrap.wrap(f"{a.problem}: warning: {w}", WIDTH, subsequent_indent="    ")
        for f in a.findings:
            text = f"{a.problem}: {f.kind}: {f.text}" + (f" [accepted: {f.reason}]" if f.reason else "")
            out += textwrap.wrap(text, WIDTH, subsequent_indent="    ")
    return out


def summary_line(audits: list[ProblemAudit], world_size: int, seconds: float) -> str:
    n = {k: sum(a.status == k for a in audits) for k in STATUS}
    accepted = sum(a.status == "ok" and bool(a.findings) for a in audits)
    # under 100 columns at the suite's size (the README's width); "reasons": the written ones
    return (f"{n['ok']} ok ({accepted} by reasons), {n['finding']} with findings, "
            f"{n['FAIL']} failed, {n['skip']} skipped of {len(audits)} at world size {world_size} in {seconds:.0f} s")


def to_json(audits: list[ProblemAudit], meta: dict[str, Any]) -> dict[str, Any]:
    return {**meta, "thresholds": thresholds(), "problems": [_jsonable(asdict(a)) for a in audits]}


def thresholds() -> dict[str, float]:
    return {k: getattr(v, k) for k in ("MIN_CALL_MS", "LAUNCH_RATIO", "MIN_BUSY", "ROOFLINE_LOW", "ROOFLINE_HIGH",
                                       "COUNT_FACTOR", "HBM_OVER", "RELEVANT_SHARE", "TOL_TIGHT", "TOL_LOOSE")}


def _jsonable(x: Any) -> Any:
    if isinstance(x, float) and not math.isfinite(x):
        return str(x)
    if isinstance(x, dict):
        return {str(k): _jsonable(val) for k, val in x.items()}
    if isinstance(x, (list, tuple, set)):
        return [_jsonable(val) for val in x]
    return x


def to_markdown(audits: list[ProblemAudit], meta: dict[str, Any]) -> str:
    device, ws = meta["device"], meta["world_size"]
    cols = _columns(device)
    lines = [f"# Suite audit: world size {ws}, {device}, size {meta['size']!r}", "",
             f"Command: `{meta['command']}`", "", f"Machine: {meta.get('machine', '?')}", "",
             "Written reasons: " + (", ".join(f"`{r}`" for r in meta.get("reasons") or []) or "none") + "; a finding "
             "they accept shows as `kind (accepted)` and does not count against its problem.", "",
             summary_line(audits, ws, meta.get("seconds", 0.0)) + "." + (
                 " Written while the audit ran: a run cut short ends here." if meta.get("in_progress") else ""), "",
             "Columns: " + "; ".join(f"**{h}** {what}" for h, what in cols) + ".", "",
             "Thresholds (pkb_ray/selfcheck/audit/verdict.py says why): " + ", ".join(
                 f"{k}={val}" for k, val in thresholds().items()) + ".", "",
             "| " + " | ".join(h for h, _ in cols) + " | findings |",
             "|" + "---|" * (len(cols) + 1)]
    for a in audits:
        said = "; ".join(f"{f.kind}" + (" (accepted)" if f.reason else "") for f in a.findings)
        if a.status in ("FAIL", "skip"):
            said = (a.message or said)[:200].replace("|", "/").replace("\n", " ")
        lines.append("| " + " | ".join(c.replace("|", "/") for c in _cells(a, device)) + f" | {said} |")
    details = detail_lines(audits)
    if details:
        lines += ["", "## Findings and failures", ""] + [f"- {d.strip()}" for d in _joined(details)]
    skipped: dict[str, set[str]] = {}
    for a in audits:
        for check, why in a.skipped.items():
            skipped.setdefault(f"{check}: {why}", set()).add(a.problem)
    if skipped:
        lines += ["", "## Checks not run", ""]
        for what, pids in sorted(skipped.items()):
            lines.append(f"- {what} ({len(pids)} problems)")
    return "\n".join(lines) + "\n"


def _joined(lines: list[str]) -> list[str]:
    """detail_lines' wrapped continuation lines joined back to one line per item."""
    out: list[str] = []
    for ln in lines:
        if ln.startswith("    ") and out:
            out[-1] += " " + ln.strip()
        else:
            out.append(ln)
    return out


def write(out_dir: str | Path, audits: list[ProblemAudit], meta: dict[str, Any]) -> tuple[Path, Path]:
    """audit_<device>_ws<N>.md and .json under out_dir (rewritten whole each time: a run cut
    short leaves what it had)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    stem = out / f"audit_{meta['device']}_ws{meta['world_size']}{meta.get('tag', '')}"
    md, js = stem.with_suffix(".md"), stem.with_suffix(".json")
    for path, text in ((md, to_markdown(audits, meta)), (js, json.dumps(to_json(audits, meta), indent=1))):
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(text)
        tmp.replace(path)
    return md, js
