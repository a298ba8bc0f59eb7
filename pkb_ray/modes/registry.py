"""The registered modes, in the order reports show them, and the one place a mode's name is
looked up: everything else asks the Mode it gets back."""

from __future__ import annotations

from pkb_ray.config.schema import RootConfig
from pkb_ray.modes.agent import Agent
from pkb_ray.modes.base import Mode, Unregistered
from pkb_ray.modes.tools import Tools
from pkb_ray.modes.zeroshot import ZeroShot

MODES: tuple[Mode, ...] = (ZeroShot(), Agent(), Tools())
"""Every `mode=` value, the default first."""

_BY_NAME = {m.name: m for m in MODES}


class UnknownMode(ValueError):
    """A `mode=` value that no mode registered."""


def mode_names() -> tuple[str, ...]:
    return tuple(_BY_NAME)


def mode_of(name: str) -> Mode:
    """The registered mode of this name; raises UnknownMode naming the registered ones."""
    try:
        return _BY_NAME[name]
    except KeyError:
        raise UnknownMode(f"mode.name={name!r} is not one of {', '.join(_BY_NAME)}") from None


def recorded_mode(name: str) -> Mode:
    """The mode cells were recorded in: the registered one, or, for a name no mode registers
    (cells read from elsewhere), a mode that only carries the name."""
    return _BY_NAME.get(name) or Unregistered(name)


def mode_config_errors(cfg: RootConfig) -> list[str]:
    """What is wrong with the config's mode section: its name, turns where the mode takes
    none, then that mode's own checks."""
    try:
        mode = mode_of(cfg.mode.name)
    except UnknownMode as exc:
        return [str(exc)]
    errors = []
    if not mode.takes_turns:
        where = " or ".join(f"mode={m.name}" for m in MODES if m.takes_turns)
        if cfg.turns is not None:
            errors.append(f"turns={cfg.turns} applies to {where} only")
        if cfg.mode.turns != 1:
            errors.append(f"mode.turns applies to {where} only ({mode.name} makes one {mode.one_cell})")
    return errors + mode.config_errors(cfg)
