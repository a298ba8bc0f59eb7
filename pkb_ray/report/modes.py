"""The sweep modes side by side: per model, one column group per mode it was swept in
(zero-shot, the feedback agent, the tool agent), so the gain of each form of agent reads
along a row. Shown when the cells hold two modes or more (a report over several sweeps,
`pkb report A B C`, or a journal that holds both)."""

from __future__ import annotations

from pkb_ray.modes import MODES, recorded_mode
from pkb_ray.report.metrics import ModelSummary

MODE_ORDER = tuple(m.name for m in MODES)
METRICS = ("pass@1", "fast_1@1", "sig_fast_1@1", "geomean x", "cost $")

LEGEND = ("Modes side by side: one column group per `mode=`; zeroshot is one answer, agent "
          "the feedback agent's best correct turn, tools the tool agent's submitted module. "
          "@1 is one attempt drawn; geomean over correct, not launch-bound cells; `-`: the "
          "model was not swept in that mode.")


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def modes_present(summaries: list[ModelSummary]) -> list[str]:
    """The modes of these figures: the known ones in their order, then any other."""
    seen = {s.mode for s in summaries}
    return [m for m in MODE_ORDER if m in seen] + sorted(seen - set(MODE_ORDER))


def _figures(s: ModelSummary) -> list[str]:
    return [_fmt(s.pass_at_1), _fmt(s.fast1_at_1), _fmt(s.sig_fast1_at_1),
            _fmt(s.geomean_speedup), f"{s.cost_usd:.2f}"]


def mode_comparison(summaries: list[ModelSummary]) -> list[dict[str, str]]:
    """One row per model: `model`, then `<mode> <metric>` for each mode present and each
    of METRICS. Empty when the figures hold fewer than two modes."""
    modes = modes_present(summaries)
    if len(modes) < 2:
        return []
    by_model: dict[str, dict[str, ModelSummary]] = {}
    for s in summaries:
        by_model.setdefault(s.model, {})[s.mode] = s
    rows = []
    for model in sorted(by_model):
        row = {"model": model}
        for mode in modes:
            s = by_model[model].get(mode)
            values = _figures(s) if s else ["-"] * len(METRICS)
            row.update({f"{mode} {metric}": v for metric, v in zip(METRICS, values)})
        rows.append(row)
    return rows


def coverage_notes(summaries: list[ModelSummary]) -> list[str]:
    """One line per model whose modes cover different numbers of problems or attempts:
    each mode's figures are over its own cells, so such a row compares unlike sets."""
    by_model: dict[str, list[ModelSummary]] = {}
    for s in summaries:
        by_model.setdefault(s.model, []).append(s)
    notes = []
    for model, group in sorted(by_model.items()):
        if len(group) > 1 and len({(s.problems, s.k) for s in group}) > 1:
            order = {m: i for i, m in enumerate(modes_present(group))}
            parts = [f"{s.mode} {s.problems} problems x {s.k} attempts"
                     for s in sorted(group, key=lambda s: order[s.mode])]
            notes.append(f"{model}: {', '.join(parts)}; each mode's figures are over its own cells")
    return notes


def comparison_markdown(summaries: list[ModelSummary]) -> list[str]:
    """The `## Modes side by side` section's lines (none for fewer than two modes)."""
    rows = mode_comparison(summaries)
    if not rows:
        return []
    cols = list(rows[0])
    names = ", ".join(f"{m} = {recorded_mode(m).title}" for m in modes_present(summaries))
    lines = ["", "## Modes side by side", "", f"Modes: {names}.", "",
             "| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(r[c] for c in cols) + " |" for r in rows]
    notes = coverage_notes(summaries)
    if notes:
        lines += [""] + [f"Note: {n}.  " for n in notes]
    lines += ["", LEGEND]
    return lines


def comparison_table(summaries: list[ModelSummary], columns: list[str] | None = None):
    """The same as a rich Table, its headers in two lines (mode over metric) to stay
    narrow; None for fewer than two modes. `columns`: only these (fitted to a terminal)."""
    from rich.table import Table

    rows = mode_comparison(summaries)
    if not rows:
        return None
    table = Table(title="modes side by side (" + ", ".join(
        f"{m} = {recorded_mode(m).title}" for m in modes_present(summaries)) + ")")
    keep = list(rows[0]) if columns is None else [c for c in rows[0] if c in columns]
    for c in keep:
        if c == "model":
            table.add_column(c, justify="left", no_wrap=True)
        else:
            mode, metric = c.split(" ", 1)
            table.add_column(f"{mode}\n{metric}", justify="right", no_wrap=True)
    for row in rows:
        table.add_row(*(row[c] for c in keep))
    return table
