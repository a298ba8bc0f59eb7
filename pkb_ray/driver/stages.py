"""The stage implementations the pipeline drives on Ray.

Generation runs in one async actor per model, pinned to the driver's node: its API key
stays on that machine and kernels_cache is written where the driver reads it. Builds are
CPU tasks, ahead of the GPU queue. Evaluation goes to whole-node evaluator actors, one slot
per GPU group (driver/slots.py).
"""

from __future__ import annotations

import os
from typing import Any

from pkb_ray.agent.feedback import AgentPolicy, conversation
from pkb_ray.config.schema import ModelConfig, RootConfig
from pkb_ray.driver.budget import Budget
from pkb_ray.driver.pipeline import CellState
from pkb_ray.driver.slots import EvalSlot
from pkb_ray.engine.build import prebuild
from pkb_ray.engine.request import EvalRequest
from pkb_ray.store.turn_log import TurnLog


def prompt_context(cfg: RootConfig, device: str, size: str, profile=None):
    """The evaluation every prompt of this sweep describes (and its hash covers); `profile`:
    the evaluating node's measured HardwareProfile (driver/hardware_probe.py), if any."""
    from pkb_ray.generation.prompt import EvalContext

    return EvalContext(world_size=cfg.eval.world_size, device=device, size=size,
                       load_timeout_s=cfg.eval.timeouts.load_s, profile=profile)


def eval_request_for(cfg: RootConfig, model: ModelConfig, device: str, size: str, state: CellState,
                     candidate_source: str) -> EvalRequest:
    """The request a cell's candidate is evaluated with (the one place a sweep builds it)."""
    from pkb_ray.generation.sources import source_for

    return EvalRequest.from_config(
        cfg.eval,
        problem_id=state.key.problem,
        problems_source=cfg.problems.source,
        candidate_source=candidate_source,
        device=device,
        size=size,
        # The model's candidate source says whether its candidates run guarded.
        guard=source_for(model).guard,
        cell_id=state.key.cell_id,
    )


def model_actor_options(model: ModelConfig) -> dict[str, Any]:
    """Ray options of a model's actor (generation, or tools mode's episodes): on the driver's
    node, where kernels_cache is written and read, with the model's API key in its
    environment (workers of a joined cluster did not inherit this shell's)."""
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    env = {}
    if model.api_key_env and model.api_key_env in os.environ:
        env[model.api_key_env] = os.environ[model.api_key_env]
    return {"num_cpus": 0, "max_concurrency": max(64, model.max_concurrency * 2),
            "scheduling_strategy": NodeAffinitySchedulingStrategy(ray.get_runtime_context().get_node_id(),
                                                                  soft=False),
            "runtime_env": {"env_vars": env} if env else None}


def submit_build(build: Any, cfg: RootConfig, source: str) -> Any:
    """The prebuild task of one module, in the sandbox the sweep configured (the build runs
    the candidate's module code once: it is sandboxed like any run of it)."""
    return build.remote(source, cfg.eval.torch_cuda_arch_list, cfg.eval.cache_dir, device="cuda",
                        sandbox_mode=cfg.eval.sandbox.mode, sandbox_user=cfg.eval.sandbox.user)


class RayStages:
    def __init__(
        self,
        cfg: RootConfig,
        models: dict[str, ModelConfig],
        device: str,
        size: str,
        budget: Budget,
        turn_log: TurnLog | None = None,
        context=None,
    ) -> None:
        """`context`: the EvalContext the prompts describe (default: from the config)."""
        import ray

        from pkb_ray.generation.service import GenerationService

        self.cfg = cfg
        self.models = models
        self.device = device
        self.size = size
        self.budget = budget
        self.turn_log = turn_log
        self.agent = (
            AgentPolicy(cfg.mode.turns, cfg.mode.target_speedup) if cfg.mode.name == "agent" else None
        )
        self.gen_actors = {}
        for name, model in models.items():
            self.gen_actors[name] = (
                ray.remote(GenerationService)
                .options(**model_actor_options(model))
                .remote(
                    model,
                    cfg.problems.source,
                    os.path.abspath(cfg.generation.cache_dir),
                    cfg.generation.replay_only,
                    context=context or prompt_context(cfg, device, size),
                )
            )
        self._build = (
            ray.remote(num_cpus=1, max_retries=1)(prebuild) if device == "cuda" else None
        )

    # -- Stages protocol -------------------------------------------------------------
    def generate(self, state: CellState) -> Any:
        history = self.history(state)
        return self.gen_actors[state.key.model].generate.remote(
            state.key.problem,
            state.key.attempt,
            turn=len(state.turns) + 1,
            history=history,
            # Past the budget, cached generations still replay; uncached ones come back
            # as budget_exhausted (transient: deferred, not recorded) without a request.
            allow_api_calls=not self.budget.exhausted(),
        )

    def history(self, state: CellState) -> list[dict] | None:
        """Agent mode supplies the conversation so far; zero-shot has none."""
        return conversation(state) if self.agent and state.turns else None

    def build(self, state: CellState) -> Any | None:
        if self._build is None:
            return None
        return submit_build(self._build, self.cfg, state.current.generation.candidate_source)

    def eval_request(self, state: CellState) -> EvalRequest:
        return eval_request_for(self.cfg, self.models[state.key.model], self.device, self.size, state,
                                state.current.generation.candidate_source or "")

    def evaluate(self, slot: EvalSlot, state: CellState) -> Any:
        if self.turn_log is not None:
            done = self.turn_log.get(state.record_id, state.turn)
            if done is not None:  # evaluated before an interrupt: not redone
                import ray

                return ray.put(done)
        # The build tells the ranks where the prebuilt extensions are (no nvcc on the GPU).
        return slot.actor.evaluate.remote(self.eval_request(state), state.current.build)

    def ping(self, slot: EvalSlot) -> Any:
        return slot.actor.fingerprint.remote()

    def continue_cell(self, state: CellState) -> bool:
        return self.agent is not None and self.agent.continue_cell(state)
