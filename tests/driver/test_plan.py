from pkb_ray.driver.plan import pending_cells, plan_cells, with_candidates


def test_plan_is_attempt_major_and_resume_skips_done_cells():
    cells = plan_cells(["a", "b"], ["p", "q"], 2, "zeroshot")
    assert [c.cell_id for c in cells[:4]] == ["a/p/1/zeroshot", "b/p/1/zeroshot",
                                              "a/q/1/zeroshot", "b/q/1/zeroshot"]
    assert len(cells) == 8
    left = pending_cells(cells, {"a/p/1/zeroshot", "b/q/2/zeroshot"})
    assert len(left) == 6 and all(c.cell_id not in {"a/p/1/zeroshot", "b/q/2/zeroshot"} for c in left)


def test_expert_cells_only_where_an_expert_exists():
    cells = plan_cells(["expert", "opus47"], ["allreduce", "tp_mlp"], 1, "zeroshot")
    kept = with_candidates(cells, {("expert", "allreduce"): True, ("expert", "tp_mlp"): False})
    assert [c.cell_id for c in kept] == ["expert/allreduce/1/zeroshot", "opus47/allreduce/1/zeroshot",
                                         "opus47/tp_mlp/1/zeroshot"]


def test_problems_that_do_not_run_at_the_world_size_are_left_out_and_named():
    from pkb_ray.driver.plan import at_world_size
    from pkb_ray.problems import load_problems

    problems = load_problems("builtin", ["allreduce", "moe_ep_forward_narrow"]).problems
    assert 2 not in problems["moe_ep_forward_narrow"].spec.world_sizes  # the premise
    kept, note = at_world_size(problems, 2)
    assert list(kept) == ["allreduce"]
    assert note is not None and "moe_ep_forward_narrow [4, 8]" in note and "eval.world_size" in note
    kept, note = at_world_size(problems, 4)
    assert set(kept) == set(problems) and note is None
