"""What every mode's stages share on Ray.

One actor per model, pinned to the driver's node: its API key stays on that machine and
kernels_cache (and the tool agent's episode journals) are written where the driver reads
them. Builds are CPU tasks, ahead of the GPU queue. Evaluation goes to whole-node evaluator
actors, one slot per GPU group (driver/slots.py); `ping` tells a restarted one is back.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from pkb_ray.config.schema import ModelConfig, RootConfig
from pkb_ray.modes.base import StageSettings
from pkb_ray.modes.cell import CellState

if TYPE_CHECKING:
    from pkb_ray.engine import EvalRequest
    from pkb_ray.generation.prompt import EvalContext


def prompt_context(cfg: RootConfig, device: str, size: str, profile=None) -> EvalContext:
    """The evaluation every prompt of this sweep describes (and its hash covers); `profile`:
    the evaluating node's measured HardwareProfile (driver/hardware_probe.py), if any."""
    from pkb_ray.generation.prompt import EvalContext

    return EvalContext(world_size=cfg.eval.world_size, device=device, size=size,
                       load_timeout_s=cfg.eval.timeouts.load_s, profile=profile)


def model_actor_options(model: ModelConfig) -> dict[str, Any]:
    """Ray options of a model's actor: on the driver's node, where kernels_cache is written
    and read, with the model's API key in its environment (workers of a joined cluster do
    not inherit this shell's)."""
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    env = {}
    if model.api_key_env and model.api_key_env in os.environ:
        env[model.api_key_env] = os.environ[model.api_key_env]
    return {"num_cpus": 0, "max_concurrency": max(64, model.max_concurrency * 2),
            "scheduling_strategy": NodeAffinitySchedulingStrategy(ray.get_runtime_context().get_node_id(),
                                                                  soft=False),
            "runtime_env": {"env_vars": env} if env else None}


class RayStages:
    """The shared half of every mode's stages: the model actors, the prebuild and the ping.
    A subclass says how a cell generates (`generate`), which turns build (`builds`), how
    a built turn is evaluated (`evaluate`) and whether the cell goes on (`continue_cell`)."""

    def __init__(self, run: StageSettings, actor_class: type, *args: Any, **kwargs: Any) -> None:
        """One `actor_class(model, *args, **kwargs)` actor per model of the sweep."""
        import ray

        from pkb_ray.engine import prebuild

        self.run = run
        self.actors = {name: ray.remote(actor_class).options(**model_actor_options(model)).remote(model, *args, **kwargs)
                       for name, model in run.models.items()}
        self._build = ray.remote(num_cpus=1, max_retries=1)(prebuild) if run.device == "cuda" else None

    def eval_request(self, state: CellState, candidate_source: str) -> EvalRequest:
        """The request a cell's candidate is evaluated with (the one place a sweep builds it)."""
        from pkb_ray.engine import EvalRequest
        from pkb_ray.generation.sources import source_for

        cfg = self.run.cfg
        return EvalRequest.from_config(
            cfg.eval,
            problem_id=state.key.problem,
            problems_source=cfg.problems.source,
            candidate_source=candidate_source,
            device=self.run.device,
            size=self.run.size,
            # The model's candidate source says whether its candidates run guarded.
            guard=source_for(self.run.models[state.key.model]).guard,
            cell_id=state.key.cell_id,
        )

    def builds(self, state: CellState) -> bool:
        """Whether the current turn's module is built on a CPU worker first (on cuda)."""
        return True

    # -- Stages protocol -------------------------------------------------------------
    def build(self, state: CellState) -> Any | None:
        """The prebuild task of the turn's module, in the sandbox the sweep configured (the
        build runs the candidate's module code once: it is sandboxed like any run of it)."""
        if self._build is None or not self.builds(state):
            return None
        ev = self.run.cfg.eval
        return self._build.remote(state.current.generation.candidate_source, ev.torch_cuda_arch_list,
                                  ev.cache_dir, device="cuda", sandbox_mode=ev.sandbox.mode,
                                  sandbox_user=ev.sandbox.user)

    def ping(self, slot: Any) -> Any:
        return slot.actor.fingerprint.remote()
