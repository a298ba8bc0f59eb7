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


def override_keys(argv: list[str]) -> list[str] | None:
    """The keys a `sweep.py` command line sets (`+`/`++`/`~` stripped), or None when Hydra
    should handle the line itself (help, or an override it cannot parse)."""
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
    return [o.key_or_group for o in parsed if not o.key_or_group.startswith("hydra")]


def check_overrides(argv: list[str]) -> str | None:
    """The error for the first unknown key of a command line, or None."""
    keys = schema_keys()
    for key in override_keys(argv) or []:
        message = unknown_key_message(key.replace("/", "."), keys)
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
