"""A sweep with nothing left says so before Ray starts (driver/done_check.py)."""

from pkb_ray.driver.done_check import cells_all_done, keep_plan, plan_digest
from pkb_ray.store import Journal
from tests.helpers import make_result


def test_all_done_only_for_the_same_plan_with_every_cell_recorded(tmp_path):
    source = tmp_path / "problems"
    (source / "p").mkdir(parents=True)
    (source / "p" / "reference.py").write_text("def solution(x):\n    return x\n")
    config = {"model": {"name": "m"}, "sweep": {"name": "s", "fresh": False, "progress": True}}
    digest = plan_digest(config, "h1", str(source))
    cells = [make_result("m", "p", attempt=a) for a in (1, 2)]
    sweep = tmp_path / "sweeps" / "s"
    sweep.mkdir(parents=True)
    keep_plan(sweep, digest, [c.record_id for c in cells])
    journal = Journal(sweep / "journal.jsonl")
    journal.append(cells[0])
    assert cells_all_done(sweep, digest) is None  # one cell left
    journal.append(cells[1])
    journal.close()
    assert cells_all_done(sweep, digest) == 2
    # How it starts and shows is not what it plans; the config, harness and problems are.
    quiet = {**config, "sweep": {"name": "s", "fresh": True, "progress": False}}
    assert plan_digest(quiet, "h1", str(source)) == digest
    assert cells_all_done(sweep, plan_digest({**config, "attempts": 3}, "h1", str(source))) is None
    assert plan_digest(config, "h2", str(source)) != digest
    (source / "p" / "reference.py").write_text("def solution(x):\n    return x + 0\n")
    assert plan_digest(config, "h1", str(source)) != digest
    assert cells_all_done(tmp_path / "nowhere", digest) is None
