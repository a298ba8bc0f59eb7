"""The plan header's arithmetic and the progress lines a log gets (no Ray needed)."""

import io

from omegaconf import OmegaConf

from pkb_ray.config import compose_config
from pkb_ray.driver.identity import sweep_settings
from pkb_ray.driver.plan import build_plan
from pkb_ray.driver.progress import InFlight, SweepProgress
from pkb_ray.generation.models import load_model_config
from pkb_ray.generation.prompt import EvalContext
from pkb_ray.problems import load_problems


def test_plan_header_adds_up_when_models_cover_different_problems():
    cfg = OmegaConf.to_object(compose_config(["attempts=2", "problems=collectives", "sweep.name=s"]))
    problems = load_problems("builtin", list(cfg.problems.ids)).problems
    problems.update(load_problems("builtin", ["ring_attention"]).problems)  # no expert solution
    models = [load_model_config("expert"), load_model_config("reference")]
    how = dict(device="cuda", size="bench", harness_version="t")
    plan = build_plan(cfg, models, problems, sweep_settings(cfg, "cuda", "bench", "t"), EvalContext(), **how)
    assert plan.problems_per_model == {"expert": 5, "reference": 6}
    assert len(plan.cells) == (5 + 6) * 2
    assert plan.size_text() == "22 cells = (expert: 5 + reference: 6 problems) x 2 attempts"
    assert "5 of 6 problems have a candidate (expert solution)" in plan.notes[0]
    same = build_plan(cfg, models[1:], problems, dict(plan.sweep_settings), EvalContext(), **how)
    assert same.size_text() == "12 cells = 1 model x 6 problems x 2 attempts"
    # Every cell carries the settings it will be recorded under, and distinct cells differ.
    assert len({c.record_id for c in plan.cells}) == len(plan.cells)
    assert all(c.identity["eval.device"] == "cuda" for c in plan.cells)


def test_the_plan_is_frozen_and_says_what_is_done_and_what_runs():
    import dataclasses

    import pytest

    cfg = OmegaConf.to_object(compose_config(["attempts=2", "problems=smoke", "sweep.name=s"]))
    problems = load_problems("builtin", list(cfg.problems.ids)).problems
    models = [load_model_config("reference")]
    settings = sweep_settings(cfg, "cpu", "small", "t")
    how = dict(device="cpu", size="small", harness_version="t", evaluators=2)
    first = build_plan(cfg, models, problems, settings, EvalContext(), **how)
    done = {first.cells[0].record_id, first.cells[3].record_id, "other/cell@0123"}
    plan = build_plan(cfg, models, problems, settings, EvalContext(), done=done, **how)
    assert [c.done for c in plan.cells] == [True, False, False, True, False, False]
    assert [c.key for c in plan.pending] == [c.key for c in plan.cells if c.record_id not in done]
    states = plan.states()  # what the pipeline runs: fresh states of the pending cells
    assert [s.record_id for s in states] == [c.record_id for c in plan.pending] and not states[0].turns
    with pytest.raises(dataclasses.FrozenInstanceError):
        plan.cells = ()  # type: ignore[misc]
    with pytest.raises(TypeError):
        plan.cells[0].identity["eval.trials"] = "1"  # type: ignore[index]
    header = plan.header()
    assert header[0].startswith("pkb: sweep 's': 6 cells = 1 model x 3 problems x 2 attempts; 2 already "
                                "recorded, 4 to run on cpu (world size 2, small sizes, 5 trials, harness t)")
    assert header[1].startswith("pkb: estimate: about") and "/ 2 evaluators" in header[1]
    assert plan.estimate_s() < build_plan(cfg, models, problems, settings, EvalContext(),
                                          **{**how, "evaluators": 1}).estimate_s()
    text = "\n".join(plan.describe())
    assert "  eval.world_size = 2" in text and text.count("  done    ") == 2 and text.count("  to run  ") == 4
    assert f"  to run  {plan.pending[0].record_id}  candidate_sha=" in text


class Clock:
    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t


def test_without_a_terminal_progress_is_one_line_per_n_cells_with_eta_and_nodes(monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)  # a log: one line per report, not wrapped
    out, clock = io.StringIO(), Clock()
    progress = SweepProgress({"a": 4, "b": 2}, interactive=False, every=2, out=out, clock=clock)
    with progress:
        progress.set_in_flight(InFlight(generating=3, building=1, queued=2,
                                        evaluating={"node 1a2b3c4d (GPUs 0,1)": ["allreduce a1", "allgather a1"]}))
        for i, (model, status, cost) in enumerate([("a", "correct", 0.5), ("b", "failed", 0.25),
                                                   ("a", "correct", 0.5), ("a", "incorrect", 0.0),
                                                   ("b", "implausible", 0.0), ("a", "deferred", 0.0)]):
            clock.t = 10.0 * (i + 1)
            progress.update(model, status, cost, last=f"{model}/p{i} a1: {status}")
    lines = out.getvalue().splitlines()
    assert len(lines) == 3  # after 2, 4 and 6 cells: quiet in between
    assert lines[0].startswith("pkb: 2/6 cells (correct 1, failed 1) $0.75; 20s elapsed, ETA 40s; "
                               "last: b/p1 a1: failed; in flight: evaluating allreduce a1, allgather a1 "
                               "on node 1a2b3c4d (GPUs 0,1); generating 3, building 1, queued 2")
    assert "ETA" not in lines[2]  # done
    assert progress.model_lines() == ["  a: 4/4 (correct 2, incorrect 1, deferred 1) $1.00",
                                      "  b: 2/2 (failed 1, implausible 1) $0.25"]


def test_disabled_progress_prints_nothing():
    out = io.StringIO()
    with SweepProgress({"a": 1}, enabled=False, interactive=False, out=out) as progress:
        progress.update("a", "correct")
    assert out.getvalue() == ""


def test_the_first_eta_is_the_devices_measured_rate_not_the_start_up(monkeypatch):
    """On GPUs the first cell landed after 35 s of start-up, and `elapsed / done` read 2m20s
    left for a sweep that ended 12 s later: the device's rate holds until the first wave of
    evaluators has landed, then the rate since the first cell."""
    from pkb_ray.driver.progress import estimate_s

    clock = Clock()
    progress = SweepProgress({"a": 5}, interactive=False, out=io.StringIO(), clock=clock,
                             prior_s_per_cell=3.55, evaluators=2)
    assert progress.eta_s() == 5 * 3.55
    clock.t = 35.0
    progress.update("a", "correct")
    clock.t = 35.5
    progress.update("a", "correct")
    assert progress.eta_s() == 3 * 3.55  # the first wave of 2 evaluators: still the device's rate
    clock.t = 42.5
    progress.update("a", "correct")
    assert progress.eta_s() == 7.5 / 2 * 2  # then the sweep's own rate since its first cell
    assert estimate_s("cpu", 12) > estimate_s("cpu", 12, evaluators=2) > 0
    assert estimate_s("cuda", 8, 4, shared=True) > estimate_s("cuda", 8, 4)


def test_a_plain_progress_line_fits_the_terminal(monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")
    out, clock = io.StringIO(), Clock()
    progress = SweepProgress({"a": 2}, interactive=False, every=1, out=out, clock=clock)
    progress.set_in_flight(InFlight(generating=64, building=16, queued=16,
                                    evaluating={f"node {i:08x} (GPUs 0,1)": ["allreduce a1"] for i in range(4)}))
    progress.update("a", "correct")
    assert out.getvalue().count("\n") > 1 and max(len(line) for line in out.getvalue().splitlines()) <= 100
