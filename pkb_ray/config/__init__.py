"""Configuration: structured dataclasses behind Hydra's `conf/` tree.

Owns the schema (schema.py: typed, validated by Hydra in struct mode), its value checks
(validate.py), override spelling help (overrides.py) and the Hydra glue (store.py). Imports
nothing of pkb_ray but itself; every layer may import it. The judges read the schema's
TimingConfig and TimeoutConfig, so importing this package must not import Hydra: store.py's
names load on first use.
"""

from __future__ import annotations

from typing import Any

from pkb_ray.config.schema import (
    ClusterConfig,
    EvalConfig,
    GenerationConfig,
    ModeConfig,
    ModelConfig,
    ProblemsConfig,
    RootConfig,
    SweepSection,
    TimeoutConfig,
    TimingConfig,
    TrackingConfig,
)

_FROM_STORE = ("CONF_DIR", "compose_config", "register_configs")

__all__ = [
    "CONF_DIR",
    "ClusterConfig",
    "EvalConfig",
    "GenerationConfig",
    "ModeConfig",
    "ModelConfig",
    "ProblemsConfig",
    "RootConfig",
    "SweepSection",
    "TimeoutConfig",
    "TimingConfig",
    "TrackingConfig",
    "compose_config",
    "register_configs",
]


def __getattr__(name: str) -> Any:
    if name in _FROM_STORE:
        from pkb_ray.config import store

        return getattr(store, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
