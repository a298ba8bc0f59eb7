"""Sweep modes as strategies: zero-shot (zeroshot.py), the feedback agent (agent.py) and the
tool agent (tools.py), each a `Mode` (base.py) registered in registry.py.

    mode = mode_of(cfg.mode.name)
    stages = mode.stages(StageSettings(cfg, models, device, size, context, sweep_dir, api_allowed))
    result = mode.finalize(state, category)

A mode says its config checks, identity settings, refusals, stages (on Ray; their shared
half in stages.py), finalisation, API estimate, and how reports and trackers name it and
draw its steps. No module outside this package branches on a mode's name.

cell.py holds the cell in flight (CellState, its Turns) that the stages read and add to.

May import records, config, store, problems, the engine (through its face), generation and
agent; report, tracking and the driver import it.
"""

from pkb_ray.modes.base import Mode, StageSettings, StepCurves
from pkb_ray.modes.cell import CellState, Turn
from pkb_ray.modes.registry import (
    MODES,
    UnknownMode,
    mode_config_errors,
    mode_names,
    mode_of,
    recorded_mode,
)
from pkb_ray.modes.stages import prompt_context

__all__ = [
    "MODES",
    "CellState",
    "Mode",
    "StageSettings",
    "StepCurves",
    "Turn",
    "UnknownMode",
    "mode_config_errors",
    "mode_names",
    "mode_of",
    "prompt_context",
    "recorded_mode",
]
