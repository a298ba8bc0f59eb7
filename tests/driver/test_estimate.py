"""A dry run's estimate: GPU time on a stated node type and API spend, assumptions said."""

from omegaconf import OmegaConf

from pkb_ray.config import compose_config
from pkb_ray.config.schema import ModelConfig
from pkb_ray.driver.estimate import (
    ASSUMED_OUTPUT_TOKENS,
    GpuEstimate,
    NodeType,
    api_costs,
    api_lines,
    planned_nodes,
)
from pkb_ray.driver.progress import CONTENTION, SECONDS_PER_CELL, STARTUP_S


def _cfg(*overrides: str):
    return OmegaConf.to_object(compose_config(list(overrides)))


def test_the_planned_nodes_are_the_stated_type_unless_this_machine_runs_it():
    nodes = planned_nodes(_cfg("eval.device=cuda"))
    assert nodes.node == NodeType(8, "H100") and nodes.count == 1 and "8 x H100" in nodes.note
    assert len(planned_nodes(_cfg("eval.device=cuda", "cluster.nodes=3")).as_ray_nodes()) == 3
    assert planned_nodes(_cfg("eval.device=auto", "cluster.address=auto")).node == NodeType(8, "H100")
    assert planned_nodes(_cfg("eval.device=cpu")).node is None
    # auto on this machine: its own GPUs, or none (the device decision then says what runs).
    assert planned_nodes(_cfg(), local=NodeType(1, "L4"), cpu_here=True).node is None  # 1 GPU < world size 2
    assert planned_nodes(_cfg(), local=NodeType(4, "H200")).node == NodeType(4, "H200")


def test_gpu_hours_follow_the_groups_of_the_node():
    grouped = GpuEstimate(NodeType(8, "H100"), nodes=2, world_size=2, exclusive=False, cells=800)
    assert grouped.slots_per_node == 4 and grouped.shared
    wall = STARTUP_S["cuda"] + SECONDS_PER_CELL["cuda"] * CONTENTION * 800 / 8
    assert abs(grouped.wall_s() - wall) < 1e-6
    assert abs(grouped.gpu_hours_rented() - wall * 16 / 3600) < 1e-6
    alone = GpuEstimate(NodeType(8, "H100"), nodes=1, world_size=2, exclusive=True, cells=10)
    assert alone.slots_per_node == 1 and not alone.shared
    assert abs(alone.gpu_hours_evaluating() - 10 * SECONDS_PER_CELL["cuda"] * 8 / 3600) < 1e-6
    text = " ".join(grouped.lines())
    assert "4 GPU groups of 2 per node" in text and "GPU-hours rented (16 GPUs)" in text


def test_api_cost_at_the_configs_prices_with_its_assumptions_said():
    # A custom endpoint is billed at the config's prices, never litellm's list price.
    model = ModelConfig(name="local", provider="openai_compatible", model_id="m", api_base="http://x/v1",
                        price_input_per_mtok=1.0, price_output_per_mtok=10.0, max_output_tokens=32000)
    free = ModelConfig(name="free", provider="openai_compatible", model_id="m", api_base="http://x/v1")
    cfg = _cfg()
    costs = api_costs([model, free], {"local": 100, "free": 5}, 2000.0, cfg)
    one = (2000 * 1.0 + ASSUMED_OUTPUT_TOKENS * 10.0) / 1e6
    assert costs[0].expected_usd == 100 * one and costs[0].source == "config"
    assert costs[0].ceiling_usd == 100 * (2000 * 1.0 + 32000 * 10.0) / 1e6
    assert costs[1].expected_usd is None  # no price known: said, not counted as free
    text = "\n".join(api_lines(costs, 2000.0, cfg, missing_keys=1))
    assert f"about ${100 * one:,.2f} for 105 replies" in text and "2,000 prompt tokens" in text
    assert "no price known (not counted): free" in text and "1 of 2 API models has no key set here" in text
    agent = api_costs([model], {"local": 100}, 2000.0, _cfg("mode=agent", "mode.turns=4"))
    assert abs(agent[0].expected_usd - 4 * 100 * one) < 1e-9


def test_api_models_on_a_machine_without_gpus_are_planned_for_the_stated_nodes():
    """A run here would refuse; the plan a laptop wants is the GPU sweep's."""
    nodes = planned_nodes(_cfg(), local=NodeType(0, "-"), cpu_here=False)
    assert nodes.node == NodeType(8, "H100") and "a run here would refuse" in nodes.note
    assert planned_nodes(_cfg(), local=NodeType(0, "-"), cpu_here=True).node is None  # the self-check
