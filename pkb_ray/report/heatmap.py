"""The model x problem heatmap: best speedup per cell, failures marked by class.

Colour is log2(speedup) on a diverging map centred on 1x (clipped to 1/4x..4x), so slower
and faster than the reference read at a glance; a cell with no correct attempt is grey with
its failure class written in it; a launch-bound speedup carries an `L`; a self-check's
harness finding (report/findings.py) is left grey, its figure written with a `!`. Text is
black or white by the cell colour's luminance.
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
is 7362 x 288 px): facets wrap instead."""
MAX_HEIGHT_PX = 2000
"""Likewise in height: 107 problems in one column of facets make a picture of 4000 px that a
viewer shrinks to fit; past this the facets go on a further page (heatmap_2.png, ...)."""
DPI = 120
CELL_W_IN, CELL_H_IN, LABEL_W_IN = 0.55, 0.26, 2.4
"""A cell fits "0.98L" at fontsize 7; a label fits a 30-character problem id at fontsize 8."""
FACET_PAD_IN, PAGE_PAD_IN = 0.9, 1.4
"""A facet's title and tick labels; a page's title and colour bar."""


def _layout(n_models: int, n_categories: int) -> tuple[int, float]:
    """(facet columns, cell width in inches) keeping the figure within MAX_WIDTH_PX."""
    max_w_in = MAX_WIDTH_PX / DPI
    cell_w = min(CELL_W_IN, max(0.2, (max_w_in - LABEL_W_IN - 0.8) / max(1, n_models)))
    facet_w = LABEL_W_IN + cell_w * n_models
    return max(1, min(n_categories, int((max_w_in - 0.8) // facet_w))), cell_w


def _facets(by_category: dict[str, list], max_rows: int) -> list[tuple[str, list]]:
    """(title, rows) per facet: a category longer than a page is split into parts."""
    out = []
    for category in sorted(by_category):
        rows = by_category[category]
        parts = [rows[i:i + max_rows] for i in range(0, len(rows), max_rows)]
        for n, part in enumerate(parts, 1):
            out.append((category if len(parts) == 1 else f"{category} ({n}/{len(parts)})", part))
    return out


def _pages(facets: list[tuple[str, list]], ncols: int, head_in: float) -> list[list[list[tuple[str, list]]]]:
    """Facets in grid rows of `ncols`, grid rows in pages no taller than MAX_HEIGHT_PX."""
    grid = [facets[i:i + ncols] for i in range(0, len(facets), ncols)]
    budget = MAX_HEIGHT_PX / DPI - PAGE_PAD_IN
    pages, page, used = [], [], 0.0
    for row in grid:
        h = _row_height(row, head_in)
        if page and used + h > budget:
            pages.append(page)
            page, used = [], 0.0
        page.append(row)
        used += h
    return pages + ([page] if page else [])


def _row_height(row: list[tuple[str, list]], head_in: float) -> float:
    return max(len(rows) for _, rows in row) * CELL_H_IN + FACET_PAD_IN + head_in


def text_color(rgba: tuple[float, ...]) -> str:
    """Black or white, whichever reads on a cell of this colour (WCAG relative luminance:
    black text on the map's dark green was unreadable)."""
    def linear(c: float) -> float:
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = (linear(c) for c in rgba[:3])
    luminance = 0.2126 * r + 0.7152 * g + 0.0722 * b
    # Contrast with black (L + 0.05) / 0.05 beats contrast with white 1.05 / (L + 0.05) above ~0.18.
    return "black" if luminance > 0.179 else "white"


def page_path(path: Path, n: int) -> Path:
    """Page 1 is `path` itself (heatmap.png), page n `heatmap_<n>.png` beside it."""
    return path if n == 1 else path.with_name(f"{path.stem}_{n}{path.suffix}")


def plot_heatmap(results: list[CellResult], path: Path) -> list[Path]:
    """Problems as rows, models as columns, one facet per category (wrapped to stay within
    MAX_WIDTH_PX, paged to stay within MAX_HEIGHT_PX); the colour scale is centred on 1.0x
    (TwoSlopeNorm on log2 speedup). Returns the pages written, none when there is nothing to
    plot; pages of an earlier, longer report are removed."""
    import logging

    import matplotlib

    matplotlib.use("Agg")  # headless: never needs a display
    logging.getLogger("matplotlib").setLevel(logging.WARNING)

    for stale in path.parent.glob(f"{path.stem}_*{path.suffix}"):
        if stale.stem[len(path.stem) + 1:].isdigit():
            stale.unlink()
    table = problem_table(results)
    if not table.rows:
        return []
    models = table.columns
    by_category: dict[str, list] = {}
    for row in table.rows:
        by_category.setdefault(row[1] or "-", []).append(row)
    ncols, cell_w = _layout(len(models), len(by_category))
    head_in = 0.12 * max(len(m) for m in models) if len(models) > 1 else 0.3
    max_rows = max(1, int((MAX_HEIGHT_PX / DPI - PAGE_PAD_IN - FACET_PAD_IN - head_in) // CELL_H_IN))
    facets = _facets(by_category, max_rows)
    ncols = min(ncols, len(facets))
    pages = _pages(facets, ncols, head_in)
    # At least 8 in (960 px): the title and the colour bar's legend fit on their lines.
    width = min(MAX_WIDTH_PX / DPI, max(8.0, ncols * (LABEL_W_IN + cell_w * len(models)) + 0.8))
    facts = sweep_facts(results)
    written = []
    for n, grid_rows in enumerate(pages, 1):
        title = f"Speedup (reference time / candidate time), best correct attempt\n{facts.short()}"
        if facts.on_cpu:
            title += "\nCPU run: these times are not measurements of GPU speed"
        if len(pages) > 1:
            title += f"\npage {n} of {len(pages)} ({path.name} to {page_path(path, len(pages)).name})"
        written.append(_draw_page(grid_rows, models, ncols, width, head_in, title, page_path(path, n)))
    return written


def _draw_page(grid_rows: list, models: list[str], ncols: int, width: float, head_in: float,
               title: str, path: Path) -> Path:
    import matplotlib
    import matplotlib.pyplot as plt
    import numpy as np
    from matplotlib.colors import TwoSlopeNorm

    heights = [_row_height(row, 0.0) for row in grid_rows]
    fig = plt.figure(figsize=(width, sum(heights) + head_in * len(grid_rows) + PAGE_PAD_IN), layout="constrained")
    subfigs = fig.subfigures(len(grid_rows), 1, height_ratios=heights, squeeze=False)[:, 0]
    cmap = matplotlib.colormaps["RdYlGn"].with_extremes(bad="#d9d9d9")
    norm = TwoSlopeNorm(vmin=-CLIP, vcenter=0.0, vmax=CLIP)  # 0 = log2(1.0x)
    image, last_axes = None, []
    for sub, row in zip(subfigs, grid_rows):
        axes = last_axes = sub.subplots(1, ncols, squeeze=False)[0]
        for ax in axes[len(row):]:
            ax.axis("off")
        for ax, (facet_title, rows) in zip(axes, row):
            values = np.full((len(rows), len(models)), np.nan)
            for i, (_, _, cells) in enumerate(rows):
                for j, model in enumerate(models):
                    cell = cells.get(model)
                    text, color = "-", "#777777"
                    if cell is not None and cell.correct and cell.finding and cell.best_speedup:
                        text, color = f"{cell.best_speedup:.2f}!", "#8b0000"  # not coloured: the harness's error
                    elif cell is not None and cell.correct and cell.best_speedup and cell.best_speedup > 0:
                        values[i, j] = max(-CLIP, min(CLIP, math.log2(cell.best_speedup)))
                        text = f"{cell.best_speedup:.2f}" + ("L" if cell.launch_bound else "")
                        color = text_color(cmap(norm(values[i, j])))
                    elif cell is not None and cell.correct:
                        text, color = "ok", "black"
                    elif cell is not None:
                        text, color = SHORT.get(cell.failure or "", cell.failure or "failed"), "#8b0000"
                    ax.text(j, i, text, ha="center", va="center", fontsize=7, color=color)
            image = ax.imshow(np.ma.masked_invalid(values), cmap=cmap, norm=norm, aspect="auto")
            ax.set_yticks(range(len(rows)), [r[0] for r in rows], fontsize=8)
            ax.set_xticks(range(len(models)), models, rotation=45 if len(models) > 1 else 0,
                          ha="right" if len(models) > 1 else "center", fontsize=8)
            ax.set_title(facet_title, fontsize=9, loc="left")
    fig.suptitle(title, fontsize=9)
    bar = subfigs[-1].colorbar(image, ax=list(last_axes), ticks=[-2, -1, 0, 1, 2], location="bottom", shrink=0.5,
                               aspect=40)
    bar.ax.set_xticklabels(["1/4x", "1/2x", "1x", "2x", "4x"], fontsize=8)
    bar.set_label("grey: no correct attempt (failure class written); L: launch-bound time; -: not covered\n"
                  "!: a self-check's harness finding (the reference against itself off 1.0), not coloured",
                  fontsize=7, color="#555555")
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    return path
