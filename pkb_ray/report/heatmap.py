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


def plot_heatmap(results: list[CellResult], path: Path) -> Path | None:
    import logging

    import matplotlib

    matplotlib.use("Agg")  # headless: never needs a display
    logging.getLogger("matplotlib").setLevel(logging.WARNING)
    import matplotlib.pyplot as plt
    import numpy as np

    table = problem_table(results)
    if not table.rows:
        return None
    models, problems = table.columns, [p for p, _, _ in table.rows]
    values = np.full((len(models), len(problems)), np.nan)
    fig, ax = plt.subplots(figsize=(max(6.0, 0.55 * len(problems) + 2.5), max(2.4, 0.5 * len(models) + 1.9)))
    cmap = matplotlib.colormaps["RdYlGn"].with_extremes(bad="#d9d9d9")
    texts = []
    for j, (_, _, cells) in enumerate(table.rows):
        for i, model in enumerate(models):
            cell = cells.get(model)
            if cell is None:
                texts.append((i, j, "-", "#777777"))
            elif cell.correct and cell.best_speedup and cell.best_speedup > 0:
                values[i, j] = max(-CLIP, min(CLIP, math.log2(cell.best_speedup)))
                texts.append((i, j, f"{cell.best_speedup:.2f}" + ("L" if cell.launch_bound else ""), "black"))
            elif cell.correct:
                texts.append((i, j, "ok", "black"))
            else:
                texts.append((i, j, SHORT.get(cell.failure or "", cell.failure or "failed"), "#8b0000"))
    image = ax.imshow(np.ma.masked_invalid(values), cmap=cmap, vmin=-CLIP, vmax=CLIP, aspect="auto")
    for i, j, text, color in texts:
        ax.text(j, i, text, ha="center", va="center", fontsize=7, color=color, rotation=0)
    ax.set_xticks(range(len(problems)), problems, rotation=60, ha="right", fontsize=8)
    ax.set_yticks(range(len(models)), models, fontsize=9)
    facts = sweep_facts(results)
    title = f"Speedup (reference time / candidate time), best correct attempt\n{facts.short()}"
    if facts.on_cpu:
        title += "\nCPU run: these times are not measurements of GPU speed"
    ax.set_title(title, fontsize=9)
    bar = fig.colorbar(image, ax=ax, ticks=[-2, -1, 0, 1, 2], fraction=0.03, pad=0.01)
    bar.ax.set_yticklabels(["1/4x", "1/2x", "1x", "2x", "4x"], fontsize=8)
    fig.text(0.01, 0.01, "grey: no correct attempt (failure class written); L: launch-bound time; "
             "-: not covered", fontsize=7, color="#555555")
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
