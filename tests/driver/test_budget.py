"""A sweep's spend counts what it paid: a generation replayed from kernels_cache was paid
for once already and does not count again."""

from pkb_ray.driver.budget import Budget
from pkb_ray.records import Generation
from tests.helpers import make_result


def test_resumed_spend_and_charges_skip_cached_generations():
    paid, replayed = make_result(problem="a", cost=0.25), make_result(problem="b", cost=0.5)
    replayed.generation.cached = True
    budget = Budget.resumed(1.0, [paid, replayed])
    assert budget.spent_usd == 0.25 and not budget.exhausted()
    turns = [Generation("m", "c", 1, cost_usd=0.5), Generation("m", "c", 1, cost_usd=9.0, cached=True),
             Generation("m", "c", 1, cost_usd=0.25)]
    budget.charge(turns)
    assert budget.spent_usd == 1.0 and budget.exhausted()
    assert "budget_usd=1.0" in budget.exhausted_message()
    assert not Budget(None, spent_usd=1e9).exhausted()  # no limit set
