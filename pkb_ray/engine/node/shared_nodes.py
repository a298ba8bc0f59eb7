"""Shared node actors: one named, detached NodeEvaluator per GPU node, which every sweep of
a Ray cluster started with cluster.share_nodes=true evaluates on.

Why: two sweeps on one node, each holding a static share (cluster.node_gpus), leave one
share idle once its sweep runs out of work while the other still has work queued. Through
one actor per node, every evaluation and tool call of every sweep asks the same GpuGroups
for a group, so whichever is ready takes a free group; Ray books the node's GPUs once, and
each result's co-tenancy counts every neighbour, whichever sweep it came from.

The actor keeps the groups itself rather than asking a separate lender: a lease then lives
in the process that runs its evaluation, so a caller that dies (a SIGKILLed sweep) cannot
leak a group, and nothing has to watch lease holders. A call whose caller died runs to its
end (its result goes unread) and releases its group then.

Detached: it outlives the sweep that started it (the first to ask), so a sweep killed
mid-way takes no other sweep's evaluations down with it. It holds the node's GPUs until
`close_shared_evaluators` (or the cluster's end).
"""

from __future__ import annotations

from typing import Any

NAMESPACE = "pkb_ray"
"""Ray namespace of the shared actors: a sweep's driver joins an anonymous one of its own,
where no other sweep could find them by name."""
PREFIX = "pkb-shared-node-"

CALLERS = 8
"""Sweeps whose evaluations a shared actor has threads for at once (each hands it one call
per group); more wait in Ray's queue until a thread is free, never for a group twice."""


class SharedNodeMismatch(RuntimeError):
    """A node's shared actor runs other settings than the caller asks for."""


class SharedNodeUnavailable(SharedNodeMismatch):
    """A node's shared actor did not come up in time (its GPUs held by a sweep of its own
    actors): a sweep is refused for it as for a mismatch, with what to do."""


def shared_name(node_id: str) -> str:
    return PREFIX + node_id


def start_shared(cls: Any, node: dict[str, Any], device: str, load_problem: str, exclusive: bool,
                 admin_threads: int) -> Any:
    """The node's shared actor: the one running, or (atomically, by its name) a new one
    holding every GPU of the node. Whoever created it fixed its device and mode."""
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    gpus = int(node["gpus"])
    return cls.options(
        name=shared_name(node["node_id"]), namespace=NAMESPACE, lifetime="detached", get_if_exists=True,
        num_cpus=1, num_gpus=gpus, max_concurrency=gpus * CALLERS + admin_threads,
        scheduling_strategy=NodeAffinitySchedulingStrategy(node["node_id"], soft=False),
    ).remote(device, load_problem, exclusive)


def start_all(cls: Any, nodes: list[dict[str, Any]], device: str, load_problem: str, exclusive: bool,
              admin_threads: int, harness_version: str, timeout_s: float) -> list[Any]:
    """Each node's shared actor, the running one or a new one, up and of these settings.

    The running ones are checked before any is started: a sweep refused on one node must
    not leave new actors on the others, holding those nodes for its settings. A new one
    that is not up within timeout_s (Ray cannot place it: another sweep's own actor holds
    GPUs of its node) is ended: left pending, it would take the node once that sweep ends
    and hold it for no sweep."""
    import ray

    found = {n["node_id"]: a for n in nodes if (a := _running(n)) is not None}
    check_alike(list(found.values()), device, exclusive, harness_version, timeout_s)
    actors = [start_shared(cls, n, device, load_problem, exclusive, admin_threads) for n in nodes]
    refs = [a.fingerprint.remote() for a in actors]
    try:
        _, late = ray.wait(refs, num_returns=len(refs), timeout=timeout_s)
    except BaseException:  # Ctrl-C on a sweep that waits for its nodes
        _end_pending(nodes, actors, refs, found)
        raise
    if late:
        _end_pending(nodes, actors, refs, found)
        names = [shared_name(n["node_id"]) for n, ref in zip(nodes, refs) if ref in late]
        raise SharedNodeUnavailable(
            f"the shared node actor(s) {names} did not start within {timeout_s:.0f} s: another sweep's "
            "own node actors (cluster.share_nodes=false) hold GPUs of the node; run once it ends")
    try:
        ray.get(refs)
    except ray.exceptions.RayActorError as exc:
        raise SharedNodeUnavailable(f"a shared node actor ended while starting: {exc}") from exc
    check_alike(actors, device, exclusive, harness_version, timeout_s)
    return actors


def _end_pending(nodes: list[dict[str, Any]], actors: list[Any], refs: list[Any], found: dict[str, Any]) -> None:
    """End the actors this caller started that are not up yet: none has run anything, and
    left pending each would take its node later for no sweep. A running one (another
    sweep's, found before) stays."""
    import ray

    _, late = ray.wait(refs, num_returns=len(refs), timeout=0)
    for n, actor, ref in zip(nodes, actors, refs):
        if ref in late and n["node_id"] not in found:
            ray.kill(actor, no_restart=True)


def _running(node: dict[str, Any]) -> Any:
    """The node's shared actor where one runs (none is started here), else None."""
    import ray

    try:
        return ray.get_actor(shared_name(node["node_id"]), namespace=NAMESPACE)
    except ValueError:  # Ray's "no such actor"
        return None


def check_alike(actors: list[Any], device: str, exclusive: bool, harness_version: str,
                timeout_s: float) -> None:
    """Raise where a shared actor was started for other settings than this sweep's: its
    results would be recorded under settings they were not measured with."""
    import ray

    for actor in actors:
        try:
            info = ray.get(actor.info.remote(), timeout=timeout_s)
        except ray.exceptions.GetTimeoutError as exc:  # another sweep's, still waiting for its node
            raise SharedNodeUnavailable(f"a shared node actor did not answer within {timeout_s:.0f} s") from exc
        theirs = {"device": info.get("device"), "exclusive": info.get("exclusive"),
                  "harness_version": info.get("harness_version", harness_version)}
        mine = {"device": device, "exclusive": exclusive, "harness_version": harness_version}
        if theirs != mine:
            raise SharedNodeMismatch(
                f"the shared node actor {shared_name(info.get('node_id', '?'))} runs {theirs}, this sweep asks "
                f"{mine}: run with its settings, or close it first (pkb_ray.engine.node.shared_nodes."
                "close_shared_evaluators, or stop the Ray cluster)")


def shared_actor_names() -> list[str]:
    """The names of the shared node actors alive on the cluster this process joined."""
    import ray

    return sorted(a["name"] for a in ray.util.list_named_actors(all_namespaces=True)
                  if a.get("namespace") == NAMESPACE and a["name"].startswith(PREFIX))


def close_shared_evaluators(timeout_s: float = 60.0) -> list[str]:
    """Close every shared node actor (judges, sandboxes, run root) and end it, giving its
    node's GPUs back to Ray; returns their names. For whoever owns the cluster, once no
    sweep is left on it: a sweep that still evaluates there loses its evaluator."""
    import ray

    names = shared_actor_names()
    actors = [ray.get_actor(name, namespace=NAMESPACE) for name in names]
    refs = [a.close.remote() for a in actors]
    if refs:
        ray.wait(refs, num_returns=len(refs), timeout=timeout_s)
    for actor in actors:
        ray.kill(actor, no_restart=True)
    return names
