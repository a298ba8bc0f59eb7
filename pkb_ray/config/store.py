"""Registers the structured configs with Hydra and composes configs outside `sweep.py`."""

from __future__ import annotations

from pathlib import Path

from hydra.core.config_store import ConfigStore

from pkb_ray.config.schema import RootConfig

CONF_DIR = Path(__file__).resolve().parents[2] / "conf"
"""The repo's `conf/` tree (the package is installed editable, or run from the repo)."""


def register_configs() -> None:
    """`conf/config.yaml` lists `pkb_schema` first, so every group merges into typed nodes."""
    ConfigStore.instance().store(name="pkb_schema", node=RootConfig)


def compose_config(overrides: list[str] | None = None, config_dir: Path = CONF_DIR):
    """The same config `sweep.py` would get, for the `pkb` CLI and tests."""
    from hydra import compose, initialize_config_dir

    register_configs()
    with initialize_config_dir(config_dir=str(config_dir), version_base="1.3"):
        return compose(config_name="config", overrides=list(overrides or []))
