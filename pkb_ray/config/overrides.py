"""Command-line keys checked against the schema, with or without `+`.

Hydra refuses an unknown key (`atempts=3`) but suggests appending it (`+atempts=3`), and an
appended key then composes silently while `attempts` stays 1: a full sweep of the wrong
size. Here every key a command line sets must exist in `RootConfig`; an unknown one fails
before Hydra runs, naming the nearest valid key.
"""

from __future__ import annotations

import dataclasses
import difflib
import typing
from pathlib import Path
from typing import Any

from pkb_ray.config.schema import RootConfig

# Hydra's own flags that print and exit: leave those command lines to Hydra.
_HYDRA_EXITS = {"-h", "--help", "--hydra-help", "--version", "-sc", "--shell-completion"}


def schema_keys(cls: type = RootConfig, prefix: str = "") -> dict[str, bool]:
    """Every dotted key of the schema -> True when it accepts keys below it (a dict or Any
    field such as `model.extra_params`), else False."""
    keys: dict[str, bool] = {}
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        key = f"{prefix}{f.name}"
        tp = hints[f.name]
        if dataclasses.is_dataclass(tp):
            keys[key] = False
            keys.update(schema_keys(tp, key + "."))
        else:
            origin = typing.get_origin(tp)
            keys[key] = tp is Any or origin is dict or tp is dict
    return keys


def unknown_key_message(key: str, keys: dict[str, bool] | None = None) -> str | None:
    """None when `key` is a valid schema key, else the error naming the nearest one."""
    keys = keys if keys is not None else schema_keys()
    if key in keys or any(key.startswith(k + ".") for k, is_open in keys.items() if is_open):
        return None
    parent, _, leaf = key.rpartition(".")
    siblings = {k.rpartition(".")[2]: k for k in keys if k.rpartition(".")[0] == parent}
    nearest = [siblings[m] for m in difflib.get_close_matches(leaf, list(siblings), n=1, cutoff=0.6)]
    nearest = nearest or difflib.get_close_matches(key, list(keys), n=1, cutoff=0.6)
    hint = f"; did you mean {nearest[0]}?" if nearest else ""
    return f"unknown config key {key!r}{hint} (`python sweep.py --cfg job` prints every key)"


def _parsed(argv: list[str]) -> list[Any] | None:
    """The overrides of a `sweep.py` command line (Hydra's Override objects), or None when
    Hydra should handle the line itself (help, or an override it cannot parse)."""
    if _HYDRA_EXITS & set(argv):
        return None
    from hydra._internal.utils import get_args_parser
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import HydraException

    args, _ = get_args_parser().parse_known_args(argv)
    try:
        parsed = OverridesParser.create().parse_overrides(list(args.overrides))
    except HydraException:
        return None  # Hydra reports the syntax error in its own words
    return [o for o in parsed if not o.key_or_group.startswith("hydra")]


def override_keys(argv: list[str]) -> list[str] | None:
    """The keys a `sweep.py` command line sets (`+`/`++`/`~` stripped), or None when Hydra
    should handle the line itself (help, or an override it cannot parse)."""
    parsed = _parsed(argv)
    return None if parsed is None else [o.key_or_group for o in parsed]


GROUP_NAMES = {"model": "model", "problems": "problem set", "mode": "mode", "cluster": "cluster config",
               "eval": "eval config", "tracking": "tracking config"}
"""How a message names an option of each config group (a folder of `conf/`)."""


def unknown_option_message(group: str, option: str, conf_dir: Path | None = None) -> str | None:
    """None when `conf/<group>/<option>.yaml` exists (or `group` is no group), else one line
    naming the nearest options: Hydra's own error is 66 lines listing every model."""
    if conf_dir is None:
        from pkb_ray.config.store import CONF_DIR

        conf_dir = CONF_DIR
    folder = Path(conf_dir) / group
    if not folder.is_dir() or (folder / f"{option}.yaml").exists():
        return None
    known = sorted(p.stem for p in folder.glob("*.yaml"))
    nearest = difflib.get_close_matches(option, known, n=3, cutoff=0.5)
    hint = f"; did you mean {', '.join(nearest)}?" if nearest else ""
    what = GROUP_NAMES.get(group, group)
    where = (f"`pkb models list` shows all {len(known)}" if group == "model"
             else f"conf/{group}/: {', '.join(known)}")
    return f"unknown {what} {option!r}{hint} ({where})"


def check_overrides(argv: list[str]) -> str | None:
    """The error for the first unknown key, or unknown option of a config group
    (`model=opus`), of a command line; None when every one is known."""
    keys = schema_keys()
    for o in _parsed(argv) or []:
        key = o.key_or_group
        message = unknown_key_message(key.replace("/", "."), keys)
        if message is None and not o.is_delete() and isinstance(o.value(), str) and "." not in key:
            message = unknown_option_message(key, o.value())
        if message:
            return message
    return None


def unknown_composed_keys(cfg: Any, keys: dict[str, bool] | None = None, prefix: str = "") -> list[str]:
    """Keys of a composed config that the schema does not have (what a `+key` slipped in
    by another route, e.g. `compose_config`, would leave)."""
    from omegaconf import DictConfig

    keys = keys if keys is not None else schema_keys()
    found = []
    for name in cfg:
        key = f"{prefix}{name}"
        if unknown_key_message(key, keys):
            found.append(key)
        elif not keys.get(key, True) and isinstance(cfg[name], DictConfig):
            found += unknown_composed_keys(cfg[name], keys, key + ".")
    return found
