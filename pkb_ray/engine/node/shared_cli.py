"""`pkb nodes`: the shared node actors of a Ray cluster (cluster.share_nodes), listed or closed.

    pkb nodes list  [--address auto]    # the shared node actors alive, one name per node
    pkb nodes close [--address auto]    # close them: their judges and sandboxes end, the GPUs go back

A shared node actor is detached: it outlives the sweeps that evaluate on it, holding its
node's GPUs, until whoever owns the cluster closes it (shared_nodes.py says why). Closing one
that a sweep still evaluates on costs that sweep its evaluator.
"""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("nodes", help="list or close the shared node actors of a Ray cluster (cluster.share_nodes)")
    p.add_argument("action", choices=["list", "close"])
    p.add_argument("--address", default="auto",
                   help="the Ray cluster (as ray.init's address; default auto: the one this machine runs)")
    p.set_defaults(handler=_nodes)


def on_cluster(address: str, action: str) -> list[str]:
    """The shared node actors of the Ray cluster at `address`, listed or closed (`action`),
    from a process not yet joined to it; their names."""
    import ray

    from pkb_ray.engine.node import shared_nodes

    ray.init(address=address, log_to_driver=False, logging_level="ERROR")
    try:
        return shared_nodes.shared_actor_names() if action == "list" else shared_nodes.close_shared_evaluators()
    finally:
        ray.shutdown()


def _nodes(args: argparse.Namespace) -> int:
    try:
        names = on_cluster(args.address, args.action)
    except (ConnectionError, RuntimeError) as exc:
        print(f"pkb nodes: no Ray cluster at {args.address!r}: {exc}")
        return 2
    verb = "alive" if args.action == "list" else "closed"
    print(f"{len(names)} shared node actor(s) {verb}" + "".join(f"\n  {n}" for n in names))
    return 0
