"""Leaderboards from recorded cells: `pkb report` and the files a sweep logs when it ends.

Owns the metrics (pass@k, fast_p@k, geometric-mean speedup: metrics.py), the leaderboard
and its header of what was measured (leaderboard.py, facts.py), tables, the heatmap, the
modes side by side (modes.py), the curves over an agent's steps (turn_curves.py) and the
rule for combining several sweeps (combine.py).

Reads records and the journal only: may import records, store and modes (how each mode is
named and drawn). tracking and the driver import it.
"""
