"""The driver's use of Ray outside the stages: joining or starting the cluster, and the
`wait`/`get` that resolve the pipeline's handles (Ray object refs), translating Ray's
errors into the pipeline's StageLost / StageFailed."""

from __future__ import annotations

import logging
import os
from typing import Any

from pkb_ray.config.schema import RootConfig
from pkb_ray.driver.pipeline import StageFailed, StageLost


def init_ray(cfg: RootConfig) -> None:
    import ray

    if ray.is_initialized():
        return
    common = dict(include_dashboard=False, logging_level=logging.WARNING, log_to_driver=False)
    if cfg.cluster.address:
        ray.init(address=cfg.cluster.address, **common)
    else:
        # Ray 2.60 turns token authentication on for a new local cluster (the token lives in
        # ~/.ray/auth_token) and warns that it did, on every run. Keep the protection, drop
        # the warning. (Setting RAY_AUTH_MODE here is too late: Ray read it at import.)
        logging.getLogger("ray._private.authentication.authentication_token_setup").setLevel(logging.ERROR)
        # "local" always starts a new instance; with no address Ray would join any cluster
        # already running on this machine (another user's, or a test's).
        ray.init(address="local", num_cpus=cfg.cluster.num_cpus or max(4, os.cpu_count() or 1), **common)


def wait(refs: list[Any], timeout_s: float) -> list[Any]:
    """The refs that are done, at most one (the pipeline reacts to each as it lands)."""
    import ray

    done, _ = ray.wait(refs, num_returns=1, timeout=timeout_s)
    return done


def close_evaluators(actors: list, timeout_s: float = 30.0) -> None:
    """Ask every node actor to stop its sandboxes and remove its directories, waiting up to
    timeout_s in all (a dead actor answers with an error, which is fine here)."""
    import ray

    refs = []
    for actor in actors:
        try:
            refs.append(actor.close.remote())
        except Exception:  # noqa: BLE001 - an actor already gone has nothing to remove
            continue
    if refs:
        ray.wait(refs, num_returns=len(refs), timeout=timeout_s)


def get(ref: Any) -> Any:
    import ray
    from ray.exceptions import RayActorError, RayError

    try:
        return ray.get(ref)
    except RayActorError as exc:  # before RayError: it is one
        raise StageLost(str(exc)) from exc
    except RayError as exc:
        raise StageFailed(str(exc)) from exc


def evaluator_labels(actors: list) -> dict[int, str]:
    """id(actor handle) -> a short name of its node (address, and GPUs it holds), for the
    progress display; an actor that does not answer in 30 s is just `evaluator N`."""
    import ray

    labels = {}
    for i, actor in enumerate(actors):
        try:
            info = ray.get(actor.info.remote(), timeout=30)
            node = info.get("node_id", "")[:8] or f"evaluator {i}"
            gpus = info.get("cuda_visible_devices")
            labels[id(actor)] = f"node {node}" + (f" (GPUs {gpus})" if gpus else f" #{i}")
        except Exception:  # noqa: BLE001: a label is not worth failing a sweep
            labels[id(actor)] = f"evaluator {i}"
    return labels
