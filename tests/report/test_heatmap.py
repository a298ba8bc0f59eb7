"""The heatmap stays readable at a full sweep's size: every page within 2000 x 2000 px, every
problem on exactly one page, and no page of an earlier, longer report left beside it."""

from __future__ import annotations

import matplotlib.image

from pkb_ray.report.heatmap import MAX_HEIGHT_PX, MAX_WIDTH_PX, _facets, plot_heatmap
from tests.helpers import make_result

CATEGORIES = {"collective": 20, "tensor": 30, "sequence": 25, "expert": 18, "fft": 15}  # 108 problems


def _sweep(models: int) -> list:
    out = []
    for category, n in CATEGORIES.items():
        for p in range(n):
            for m in range(models):
                out.append(make_result(f"model_{m:02d}", f"{category}_problem_{p:02d}", category=category,
                                       speedup=0.5 + (p + m) % 7 / 3, correct=(p + m) % 5 != 0))
    return out


def test_a_full_sweep_pages_within_bounds_and_keeps_every_problem(tmp_path):
    results = _sweep(40)
    pages = plot_heatmap(results, tmp_path / "heatmap.png")
    assert [p.name for p in pages][:2] == ["heatmap.png", "heatmap_2.png"]
    for page in pages:
        h, w = matplotlib.image.imread(page).shape[:2]
        assert w <= MAX_WIDTH_PX and h <= MAX_HEIGHT_PX, (page.name, w, h)
        assert w >= 960 and h >= 300  # a page, not a sliver
    # The facets the pages are drawn from hold every problem once.
    by_category: dict[str, list] = {}
    for category, n in CATEGORIES.items():
        by_category[category] = [(f"{category}_problem_{p:02d}", category, {}) for p in range(n)]
    shown = [row[0] for _, rows in _facets(by_category, max_rows=12) for row in rows]
    assert sorted(shown) == sorted(r[0] for rows in by_category.values() for r in rows)
    assert any("(1/3)" in title for title, _ in _facets(by_category, max_rows=12))

    # A later, smaller report of the same sweep leaves one page, not stale ones beside it.
    assert plot_heatmap(_sweep(2)[:40], tmp_path / "heatmap.png") == [tmp_path / "heatmap.png"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["heatmap.png"]


def test_cell_text_reads_on_its_colour():
    """Black text on the map's dark green (a 4x speedup) was unreadable."""
    import matplotlib

    from pkb_ray.report.heatmap import text_color

    cmap = matplotlib.colormaps["RdYlGn"]
    assert text_color(cmap(1.0)) == "white" and text_color(cmap(0.0)) == "white"  # dark green, dark red
    assert text_color(cmap(0.5)) == "black"  # the pale yellow of 1.0x
