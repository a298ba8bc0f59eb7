"""The hardware profile a sweep's prompts describe, asked of one evaluating node at plan time.

The plan needs it before any evaluator exists: the prompt's hash is part of every API
cell's identity, so the cells already recorded are known only once the prompt is. One
NodeEvaluator is started on the first GPU node that can hold the sweep (the node the
evaluators list first), holding all that node's GPUs as the evaluators will (so it has
their fingerprint and reads their cached profile), asked `hardware_profile`, and killed;
no placement group is made, so nothing is left reserved. On a mixed cluster the prompts
describe that one node, and the sweep says so (each cell records the fingerprint of the
node that evaluated it).
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from pkb_ray.config.schema import ModelConfig, RootConfig
from pkb_ray.driver.checks import refuse, say

if TYPE_CHECKING:
    from pkb_ray.engine.hardware import HardwareProfile

PROBE_TIMEOUT_S = 600.0
"""Start (Ray places the actor once the node's GPUs are free) plus a first measurement:
about 1 s per GPU pair and 3 s, under evaluation.PROFILE_TIMEOUT_S (300 s) of its own."""


PROFILE_FILE = "hardware_profile.json"
"""In the sweep's directory: the profile its prompts were written from."""


@dataclass
class SweepProfile:
    """What a sweep's prompts describe, and what to keep for its later runs."""

    profile: HardwareProfile | None
    """None: the prompts state the design target, not a measurement."""
    to_keep: dict[str, Any] | None = None
    """The JSON for `<sweep>/hardware_profile.json` (keep_profile), when it is not kept yet."""


NOT_MEASURED = {"not_measured": True}
"""Kept when the first run had no profile: later runs keep the design-target text too."""


def sweep_profile(cfg: RootConfig, device: str, models: Sequence[ModelConfig], sweep_dir: Path,
                  probe: bool = True) -> SweepProfile:
    """The profile a sweep's prompts describe, the same on every run of the sweep.

    The prompt's hash is part of every API cell's identity, episode journal and
    kernels_cache key: a profile measured anew (another node first by address, a bandwidth
    that rounds differently), or one measured where the first run's probe had failed, would
    plan every API cell anew, hide what was recorded and pay for it again. So the first
    run's profile (or that it had none) is kept in the sweep's directory and every later
    run reuses it (sweep.fresh=true measures again); a run on other GPUs is refused. Writes
    nothing: the caller keeps `to_keep` once the sweep's sinks are open. Not `probe` (a dry
    run): the kept profile, else none (the design target's text), and no node is asked."""
    if not needs_profile(device, models):
        return SweepProfile(None)
    path = sweep_dir / PROFILE_FILE
    kept = None if cfg.sweep.fresh else _read(path)
    if not probe:
        return SweepProfile(_profile(kept) if kept is not None and kept != NOT_MEASURED else None)
    if kept == NOT_MEASURED:
        say(f"pkb: this sweep's prompts were written without a measured hardware profile ({path}); "
            "they stay so (sweep.fresh=true measures again)")
        return SweepProfile(None)
    saved = _profile(kept) if kept is not None else None
    probed = prompt_profile(cfg, device, models, quiet=saved is not None)
    if saved is None:
        return SweepProfile(probed, asdict(probed) if probed is not None else dict(NOT_MEASURED))
    if probed is None:
        say(f"pkb: no hardware profile from the GPU nodes now; the prompts describe, as on this "
            f"sweep's earlier runs, {saved.gpu_count} x {saved.gpu_name} ({path})")
    elif (probed.gpu_name, probed.gpu_count) != (saved.gpu_name, saved.gpu_count):
        raise refuse(f"pkb: sweep {cfg.sweep.name!r} was prompted for {saved.gpu_count} x {saved.gpu_name} "
                     f"({path}); the GPU nodes now have {probed.gpu_count} x {probed.gpu_name}. Resume it "
                     "on that hardware, or start another sweep (sweep.name=NEW, or sweep.fresh=true to "
                     "archive this one). Nothing ran.")
    return SweepProfile(saved)


def keep_profile(sweep_dir: Path, chosen: SweepProfile) -> None:
    if chosen.to_keep is not None:
        sweep_dir.mkdir(parents=True, exist_ok=True)
        tmp = sweep_dir / (PROFILE_FILE + ".tmp")
        tmp.write_text(json.dumps(chosen.to_keep, indent=1))
        tmp.replace(sweep_dir / PROFILE_FILE)


def _read(path: Path) -> dict | None:
    try:
        d = json.loads(path.read_text()) if path.exists() else None
    except ValueError:
        return None
    return d if isinstance(d, dict) else None


def _profile(d: dict) -> HardwareProfile | None:
    from pkb_ray.engine.hardware import profile_from_dict

    try:
        return profile_from_dict(d)
    except (ValueError, TypeError, AttributeError):
        return None


def needs_profile(device: str, models: Sequence[ModelConfig]) -> bool:
    """Prompts are built (a model calls an API) and describe GPUs."""
    from pkb_ray.generation.sources import source_for

    return device == "cuda" and any(source_for(m).calls_api for m in models)


def prompt_profile(cfg: RootConfig, device: str, models: Sequence[ModelConfig],
                   quiet: bool = False) -> HardwareProfile | None:
    """The profile the prompts are written from: None on cpu, or when no model of the sweep
    calls an API (no prompt is built, and no GPU time is spent on it); else the first GPU
    node's, or None (said, unless `quiet`) when none can be had, and the prompts state the
    design target."""
    if not needs_profile(device, models):
        return None
    try:
        profile, why = node_hardware_profile(cfg.eval.world_size, cfg.eval.cache_dir)
    except Exception as exc:  # noqa: BLE001: a failed probe costs the measured text, not the sweep
        profile, why = None, f"{type(exc).__name__}: {exc}"
    if profile is None and not quiet:
        say(f"pkb: no hardware profile from the GPU nodes ({why}); the prompts describe the "
            "design target (2 x H200), labelled as not measured")
    return profile


def node_hardware_profile(world_size: int, cache_dir: str,
                          timeout_s: float = PROBE_TIMEOUT_S) -> tuple[HardwareProfile | None, str]:
    """(profile, why it is None) from the first alive node with >= world_size GPUs."""
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    from pkb_ray.engine import NodeEvaluator, gpu_nodes_in_cluster

    nodes = [n for n in gpu_nodes_in_cluster() if n["gpus"] >= world_size]
    if not nodes:
        return None, f"no alive node has >= {world_size} GPUs"
    node = nodes[0]
    note = mixed_gpus_note(nodes)
    if note:
        say(note)
    actor = NodeEvaluator.options(
        num_cpus=1, num_gpus=node["gpus"], max_restarts=0,
        scheduling_strategy=NodeAffinitySchedulingStrategy(node["node_id"], soft=False),
    ).remote("cuda")
    try:
        profile = ray.get(actor.hardware_profile.remote(cache_dir), timeout=timeout_s)
    finally:
        ray.kill(actor)
    return profile, "" if profile is not None else f"measuring on node {node['address']} failed"


def mixed_gpus_note(nodes: list[dict]) -> str:
    """What to tell a user whose evaluating nodes differ in GPU type or count: the prompts
    describe the first node only; "" on a uniform cluster."""
    counts = Counter(_gpu_kind(n) for n in nodes)
    if len(counts) < 2:
        return ""
    listed = ", ".join(f"{c} node(s) of {g} x {t}" for (t, g), c in sorted(counts.items()))
    first_type, first_gpus = _gpu_kind(nodes[0])
    return (f"pkb: the evaluating nodes differ ({listed}); the prompts describe node {nodes[0]['address']} "
            f"({first_gpus} x {first_type}). Speedups are measured on the "
            "node that evaluates each cell (its fingerprint is recorded); to sweep one kind, run on a "
            "cluster of that kind.")


def _gpu_kind(node: dict) -> tuple[str, int]:
    return node.get("gpu_type") or "unknown GPU", node["gpus"]
