"""Configuration: structured dataclasses behind Hydra's `conf/` tree."""

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
from pkb_ray.config.store import CONF_DIR, compose_config, register_configs

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
