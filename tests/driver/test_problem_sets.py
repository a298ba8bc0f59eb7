"""The CPU self-check's problem set: one problem per category, the same in problems=auto
(the default, on CPU) and problems=representative."""

from pkb_ray.config import compose_config
from pkb_ray.problems import load_problems


def test_the_representative_set_covers_each_category_once():
    auto = compose_config([]).problems
    representative = compose_config(["problems=representative"]).problems
    assert list(auto.ids) == [] and list(auto.cpu_ids) == list(representative.ids)
    problems = load_problems("builtin", list(representative.ids)).problems
    every = load_problems("builtin", None).problems
    categories = [p.spec.category for p in problems.values()]
    assert sorted(categories) == sorted({p.spec.category for p in every.values()})
    assert len(categories) == len(set(categories))  # one each: the self-check takes minutes
    assert all(2 in p.spec.world_sizes for p in problems.values())  # the default world size


def test_problems_all_means_every_problem_on_cpu_too():
    assert list(compose_config(["problems=all"]).problems.cpu_ids) == []
