"""The model x problem heatmap: best speedup per cell, failures marked by class.

Colour is log2(speedup) on a diverging map centred on 1x (clipped to 1/4x..4x), so slower
and faster than the reference read at a glance; a cell with no correct attempt is grey with
its failure class written in it; a launch-bound speedup carries an `L`.
"""

from __future__ import annotations

import math
from pathlib import Path

from pkb_ray.records import CellResult
from pkb_ray.report.facts import sweep_facts
from pkb_ray.report.tables import SHORT, problem_table

CLIP = 2.0  # log2: 1/4x .. 4x
MAX_WIDTH_PX = 2000
"""A picture wider than a screen is scrolled or shrunk unreadable (one row of 107 problems
was 7362 x 288 px, 2026-11-24): facets wrap instead."""
DPI = 120
CELL_W_IN, CELL_H_IN, LABEL_W_IN = 0.55, 0.26, 2.4
"""A cell fits "0.98L" at fontsize 7; a label fits a 30-character problem id at fontsize 8."""


def _layout(n_models: int, n_categories: int) -> tuple[int, float]:
    """(facet columns, cell width in inches) keeping the figure within MAX_WIDTH_PX."""
    max_w_in = MAX_WIDTH_PX / DPI
    cell_w = min(CELL_W_IN, max(0.2, (max_w_in - LABEL_W_IN - 0.8) / max(1, n_models)))
    facet_w = LABEL_W_IN + cell_w * n_models
    return max(1, min(n_categories, int((max_w_in - 0.8) // facet_w))), cell_w


def plot_heatmap(results: list[CellResult], path: Path) -> Path | None:
    """Problems as rows, models as columns, one facet per category (wrapped to stay within
    MAX_WIDTH_PX); the colour scale is centred on 1.0x (TwoSlopeNorm on log2 speedup)."""
    import logging

    import matplotlib

    matplotlib.use("Agg")  # headless: never needs a display
    logging.getLogger("matplotlib").setLevel(logging.WARNING)
    import matplotlib.pyplot as plt
    import numpy as np
    from matplotlib.colors import TwoSlopeNorm

    table = problem_table(results)
    if not table.rows:
        return None
    models = table.columns
    by_category: dict[str, list] = {}
    for row in table.rows:
        by_category.setdefault(row[1] or "-", []).append(row)
    categories = sorted(by_category)
    ncols, cell_w = _layout(len(models), len(categories))
    nrows = math.ceil(len(categories) / ncols)
    grid_rows = [categories[r * ncols:(r + 1) * ncols] for r in range(nrows)]
    heights = [max(len(by_category[c]) for c in row) * CELL_H_IN + 0.9 for row in grid_rows]
    model_label_h = 0.12 * max(len(m) for m in models) if len(models) > 1 else 0.3
    # At least 8 in (960 px): the title and the colour bar's legend fit on their lines.
    width = min(MAX_WIDTH_PX / DPI, max(8.0, ncols * (LABEL_W_IN + cell_w * len(models)) + 0.8))
    fig = plt.figure(figsize=(width, sum(heights) + model_label_h * nrows + 1.4), layout="constrained")
    subfigs = fig.subfigures(nrows, 1, height_ratios=heights, squeeze=False)[:, 0]
    cmap = matplotlib.colormaps["RdYlGn"].with_extremes(bad="#d9d9d9")
    norm = TwoSlopeNorm(vmin=-CLIP, vcenter=0.0, vmax=CLIP)  # 0 = log2(1.0x)
    image, last_axes = None, []
    for sub, row in zip(subfigs, grid_rows):
        axes = last_axes = sub.subplots(1, ncols, squeeze=False)[0]
        for ax in axes[len(row):]:
            ax.axis("off")
        for ax, category in zip(axes, row):
            rows = by_category[category]
            values = np.full((len(rows), len(models)), np.nan)
            for i, (_, _, cells) in enumerate(rows):
                for j, model in enumerate(models):
                    cell = cells.get(model)
                    text, color = "-", "#777777"
                    if cell is not None and cell.correct and cell.best_speedup and cell.best_speedup > 0:
                        values[i, j] = max(-CLIP, min(CLIP, math.log2(cell.best_speedup)))
                        text, color = f"{cell.best_speedup:.2f}" + ("L" if cell.launch_bound else ""), "black"
                    elif cell is not None and cell.correct:
                        text, color = "ok", "black"
                    elif cell is not None:
                        text, color = SHORT.get(cell.failure or "", cell.failure or "failed"), "#8b0000"
                    ax.text(j, i, text, ha="center", va="center", fontsize=7, color=color)
            image = ax.imshow(np.ma.masked_invalid(values), cmap=cmap, norm=norm, aspect="auto")
            ax.set_yticks(range(len(rows)), [r[0] for r in rows], fontsize=8)
            ax.set_xticks(range(len(models)), models, rotation=45 if len(models) > 1 else 0,
                          ha="right" if len(models) > 1 else "center", fontsize=8)
            ax.set_title(category, fontsize=9, loc="left")
    facts = sweep_facts(results)
    title = f"Speedup (reference time / candidate time), best correct attempt\n{facts.short()}"
    if facts.on_cpu:
        title += "\nCPU run: these times are not measurements of GPU speed"
    fig.suptitle(title, fontsize=9)
    bar = subfigs[-1].colorbar(image, ax=list(last_axes), ticks=[-2, -1, 0, 1, 2], location="bottom", shrink=0.5,
                       aspect=40)
    bar.ax.set_xticklabels(["1/4x", "1/2x", "1x", "2x", "4x"], fontsize=8)
    bar.set_label("grey: no correct attempt (failure class written); L: launch-bound time; "
                  "-: not covered", fontsize=7, color="#555555")
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    return path
