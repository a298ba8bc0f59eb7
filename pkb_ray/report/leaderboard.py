"""The leaderboard: a header that says what was measured, the totals per model, the
per-problem table (models as columns), written as Markdown and CSV, with a fast_p plot
and a model x problem heatmap beside it; printed with rich."""

from __future__ import annotations

import csv
from dataclasses import dataclass, field
from pathlib import Path

from pkb_ray.modes import MODES, recorded_mode
from pkb_ray.records import CellResult
from pkb_ray.report.facts import SweepFacts, sweep_facts
from pkb_ray.report.findings import FINDINGS_LEGEND, finding_lines
from pkb_ray.report.heatmap import plot_heatmap
from pkb_ray.report.metrics import FAST_P_THRESHOLDS, ModelSummary, fast_p_at_k, group_cells, summarize
from pkb_ray.report.modes import comparison_markdown, comparison_table, mode_comparison  # noqa: F401 (its old home)
from pkb_ray.report.tables import ProblemTable, problem_table
from pkb_ray.report.turn_curves import curve_mode, plot_step_curves, step_curves

LEGEND = (
    "pass@k: unbiased estimator over the k attempts per problem. fast_p@k: correct and "
    "speedup > p (PKB's point estimate). sig_fast_p@k: correct and the speedup's 95% interval "
    "above p (a cell without an interval never counts). Speeds (fast_p, geomean) leave out "
    "`launch_bound` cells (their time is launch overhead) and `implausible` ones (correct "
    "outputs at a time the hardware or the judge's clock rules out); both are counted in "
    "their own columns. Per problem: best correct speedup (correct/attempts when k > 1), "
    "else the most common failure class."
)


@dataclass
class Report:
    summaries: list[ModelSummary]
    markdown_path: Path
    csv_path: Path
    plot_path: Path | None
    curves: dict[str, dict[str, list[float]]]
    """model -> curve name -> one value per step (report/turn_curves.py: agent mode's
    `pass@turn`..., tools mode's `pass@step`...; curve_mode() maps a name to its mode)."""
    problems_csv_path: Path | None = None
    heatmap_pages: list[Path] = field(default_factory=list)
    """heatmap.png, then heatmap_2.png ... where a sweep needs more than one page."""
    facts: SweepFacts | None = None
    problems: ProblemTable | None = None
    curve_plots: dict[str, Path] = field(default_factory=dict)
    """Mode -> the plot of its curves over steps (modes with steps, present in the cells)."""
    findings: list[str] = field(default_factory=list)
    """The self-check's harness findings, one line each (report/findings.py)."""

    @property
    def heatmap_path(self) -> Path | None:
        """The heatmap's first page."""
        return self.heatmap_pages[0] if self.heatmap_pages else None

    def files(self) -> list[Path]:
        return [p for p in (self.markdown_path, self.csv_path, self.problems_csv_path,
                            self.plot_path, *self.heatmap_pages, *self.curve_plots.values()) if p]


def _fmt(value: object) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


def _columns(summaries: list[ModelSummary]) -> list[str]:
    cols: list[str] = []
    for s in summaries:
        for c in s.as_row():
            if c not in cols:
                cols.append(c)
    return cols


def _markdown_table(cols: list[str], rows: list[dict[str, object]]) -> list[str]:
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(_fmt(r.get(c)) for c in cols) + " |" for r in rows]
    return lines


def curves_markdown(curves: dict[str, dict[str, list[float]]]) -> list[str]:
    """The curves over steps as text: one row per (model, curve), its value after each
    step (the first 20)."""
    if not curves:
        return []
    modes = {curve_mode(n) for named in curves.values() for n in named}
    plots = ", ".join(m.curves.plot for m in MODES if m.curves and m.name in modes)
    lines = ["", "## Correct by step (agent modes)", "",
             "Share of cells after each step (a turn of the feedback agent, a tool call of the "
             f"tool agent); definitions in pkb_ray/report/turn_curves.py. Plots: {plots}.", "",
             "| model | mode | curve | steps | after step 1, 2, ... |", "|---|---|---|---|---|"]
    for model, named in curves.items():
        for name, values in named.items():
            shown = ", ".join(f"{v:.2f}" for v in values[:20]) + (", ..." if len(values) > 20 else "")
            lines.append(f"| {model} | {curve_mode(name) or '?'} | {name} | {len(values)} | {shown} |")
    return lines


def to_markdown(summaries: list[ModelSummary], facts: SweepFacts | None = None,
                table: ProblemTable | None = None, title: str = "Leaderboard",
                curves: dict[str, dict[str, list[float]]] | None = None,
                findings: list[str] | None = None) -> str:
    lines = [f"# {title}", ""]
    if facts is not None:
        lines += [f"{line}  " for line in facts.header()] + [""]
    lines += ["## Totals per model", ""]
    lines += _markdown_table(_columns(summaries), [s.as_row() for s in summaries])
    if table is not None and table.rows:
        lines += ["", "## Per problem (best correct speedup, or why none was correct)", ""]
        rows = table.as_dicts()
        lines += _markdown_table(list(rows[0]), rows)
    lines += comparison_markdown(summaries)
    lines += curves_markdown(curves or {})
    lines += findings_markdown(findings or [])
    lines += ["", LEGEND]
    return "\n".join(lines) + "\n"


def findings_markdown(findings: list[str]) -> list[str]:
    """The self-check's harness findings (report/findings.py), one item each."""
    if not findings:
        return []
    return ["", f"## Harness findings: {len(findings)} self-check cells off 1.0", "", FINDINGS_LEGEND, ""] + [
        f"- {line}" for line in findings]


def write_csv(summaries: list[ModelSummary], path: Path) -> None:
    cols = _columns(summaries)
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=cols)
        writer.writeheader()
        for s in summaries:
            writer.writerow(s.as_row())


def write_problems_csv(table: ProblemTable, path: Path) -> None:
    rows = table.as_dicts()
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=["problem", "category", *table.columns])
        writer.writeheader()
        writer.writerows(rows)


def plot_fast_p(results: list[CellResult], path: Path) -> Path | None:
    """fast_p@k against p, one line per (model, mode): solid the point estimate, dashed the
    significant form."""
    import logging

    import matplotlib

    matplotlib.use("Agg")  # headless: never needs a display
    logging.getLogger("matplotlib").setLevel(logging.WARNING)  # font-cache notices
    import matplotlib.pyplot as plt

    grouped = group_cells(results)
    if not grouped:
        return None
    thresholds = [i / 20 for i in range(0, 81)]  # p from 0 to 4 in steps of 0.05
    # Constrained layout keeps the title and legend inside the figure; tight_layout warns
    # ("not compatible") on every long title.
    fig, ax = plt.subplots(figsize=(7, 4.5), layout="constrained")
    for (model, mode), per_problem in sorted(grouped.items()):
        k = max(len(c) for c in per_problem.values())
        ys = [fast_p_at_k(per_problem, p, k) for p in thresholds]
        (line,) = ax.plot(thresholds, ys, label=f"{model} ({mode}, k={k})")
        sig = [fast_p_at_k(per_problem, p, k, significant=True) for p in thresholds]
        ax.plot(thresholds, sig, ls="--", color=line.get_color(), label=f"{model} significant")
    ax.set_xlabel("speedup threshold p (reference time / candidate time)")
    ax.set_ylabel("fast_p@k (fraction of problems)")
    ax.set_ylim(0, 1.02)
    ax.axvline(1.0, color="grey", lw=0.8, ls="--")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="upper right", framealpha=0.9)  # curves fall to the right
    facts = sweep_facts(results)
    title = f"fast_p: correct and faster than the reference by more than p\n{facts.short()}"
    if facts.on_cpu:
        title += "\nCPU run: not a measurement of GPU speed"
    ax.set_title(title, fontsize=9)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def build_report(results: list[CellResult], out_dir: Path, title: str = "Leaderboard") -> Report:
    """Every file of the leaderboard, written into `out_dir` (the sweep's directory)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    summaries = summarize(results)
    facts = sweep_facts(results)
    table = problem_table(results)
    curves = step_curves(results)
    md = out_dir / "leaderboard.md"
    findings = finding_lines(results)
    md.write_text(to_markdown(summaries, facts, table, title, curves, findings), encoding="utf-8")
    csv_path = out_dir / "leaderboard.csv"
    write_csv(summaries, csv_path)
    problems_csv = out_dir / "leaderboard_problems.csv"
    write_problems_csv(table, problems_csv)
    plot = plot_fast_p(results, out_dir / "fast_p.png")
    heatmaps = plot_heatmap(results, out_dir / "heatmap.png")
    baseline = {s.model: s.pass_at_1 for s in summaries if recorded_mode(s.mode).baseline}
    plots = {m.name: plot_step_curves(curves, m.name, out_dir / m.curves.plot, baseline, facts.short())
             for m in MODES if m.curves}
    return Report(summaries, md, csv_path, plot, curves, problems_csv, heatmaps, facts, table,
                  {mode: path for mode, path in plots.items() if path}, findings)


def _display_row(s: ModelSummary) -> dict[str, str]:
    """The printed totals: the headline figures (Markdown and CSV carry every column)."""
    row = {
        "model": s.model,
        "mode": s.mode,
        "k": str(s.k),
        "cells": str(s.cells),
        "ok/wrong/failed/implaus.": "/".join(
            str(s.counts.get(k, 0)) for k in ("correct", "incorrect", "failed", "implausible")
        ),
        "launch-bound": str(s.launch_bound),
        "pass@1": _fmt(s.pass_at_1),
    }
    if s.k > 1:
        row["pass@k"] = _fmt(s.pass_at_k)
    for p in FAST_P_THRESHOLDS:
        row[f"fast_{p:g}@k"] = _fmt(s.fast_p_at_k[p])
        row[f"sig_fast_{p:g}@k"] = _fmt(s.sig_fast_p_at_k[p])
    row["geomean x"] = _fmt(s.geomean_speedup)
    row["cost $"] = f"{s.cost_usd:.2f}"
    if s.harness_findings:
        row["findings"] = str(s.harness_findings)
    return row


MAX_PRINTED_FINDINGS = 20
"""A sweep with more prints this many; leaderboard.md lists every one."""

# The totals' columns, the most useful first: dropped from the end to fit the terminal.
TOTALS_PRIORITY = ("model", "pass@1", "geomean x", "findings", "fast_1@k", "cells", "ok/wrong/failed/implaus.",
                   "pass@k", "mode", "cost $", "k", "sig_fast_1@k", "fast_1.5@k", "fast_2@k",
                   "launch-bound", "sig_fast_1.5@k", "sig_fast_2@k")


def print_leaderboard(report: Report, title: str, wide: bool = False, self_check: bool = False,
                      report_args: str = "SWEEP_NAME") -> None:
    """The totals and per-problem tables, fitted to the terminal (columns left out by
    priority, and named); `wide`: every column, whatever the width. `self_check`: the
    candidates were the references themselves, which the figures are read against.
    `report_args`: the sweep names `pkb report` takes to show this report again."""
    from rich.console import Console
    from rich.table import Table

    from pkb_ray.console import fit_columns, terminal_width, wrap

    width = terminal_width()
    console = Console(width=100_000 if wide else width, soft_wrap=wide)
    console.print(f"[bold]{title}[/bold]")
    for line in (report.facts.header() if report.facts else []):
        console.print(line, highlight=False)
    if self_check:
        console.print("Self-check: each problem's reference ran as its own candidate. These figures "
                      "measure the harness, not a model: pass@1 should be 1.0 and a speedup near 1.0x "
                      "(the reference timed against itself).", highlight=False)
    left_out: list[str] = []

    def fitted(name: str, rows: list[dict[str, str]], priority: tuple[str, ...],
               justify_left: tuple[str, ...]) -> Table:
        cols: list[str] = []
        for row in rows:
            cols += [c for c in row if c not in cols]
        if not wide:
            cols, dropped = fit_columns(cols, rows, priority, width)
            if dropped:
                left_out.append(f"{', '.join(dropped)} (of {name!r})")
        table = Table(title=name)
        for c in cols:
            table.add_column(c, justify="left" if c in justify_left else "right", no_wrap=True)
        for row in rows:
            table.add_row(*[row.get(c, "-") for c in cols])
        return table

    console.print(fitted("totals per model", [_display_row(s) for s in report.summaries],
                         TOTALS_PRIORITY, ("model", "mode")))
    if report.problems is not None and report.problems.rows:
        rows_p = report.problems.as_dicts()
        models = [c for c in rows_p[0] if c not in ("problem", "category")]
        console.print(fitted("per problem: best correct speedup, or why none was correct", rows_p,
                             ("problem", *models, "category"), ("problem", "category")))
    side_rows = mode_comparison(report.summaries)
    if side_rows:
        cols = list(side_rows[0])
        if not wide:  # per mode: pass@1 and geomean first, the significance columns last
            metric_rank = {m: i for i, m in enumerate(("pass@1", "geomean x", "fast_1@1", "cost $"))}
            priority = sorted(cols, key=lambda c: (c != "model", metric_rank.get(c.split(" ", 1)[-1], 9)))
            cols, dropped = fit_columns(cols, side_rows, tuple(priority), width)
            if dropped:
                left_out.append(f"{', '.join(dropped)} (of 'modes side by side')")
        console.print(comparison_table(report.summaries, cols))
    if report.findings:
        shown = report.findings[:MAX_PRINTED_FINDINGS]
        more = len(report.findings) - len(shown)
        console.print(f"[bold]Harness findings: {len(report.findings)} self-check cells off 1.0[/bold]")
        console.print(FINDINGS_LEGEND, highlight=False)
        for line in shown:  # wrapped here: rich would carry a long one on at column 0
            console.print(f"  {line}" if wide else wrap(f"  {line}", width=width, indent="    "),
                          highlight=False, markup=False)
        if more:
            console.print(f"  ... and {more} more (leaderboard.md lists them all)", highlight=False)
    if left_out:
        console.print(f"Left out to fit {width} columns: {'; '.join(left_out)}. "
                      f"`pkb report {report_args} --wide` shows every column; leaderboard.md has them all.",
                      highlight=False)
