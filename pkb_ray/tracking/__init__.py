"""Experiment trackers: mirrors of the sweep's journal (pkb_ray/store), behind one protocol."""

from pkb_ray.tracking.tracker import SweepSummary, Tracker, trackers_for

__all__ = ["SweepSummary", "Tracker", "trackers_for"]
