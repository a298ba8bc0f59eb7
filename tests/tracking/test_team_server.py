"""MLflow as a team runs it: PostgreSQL behind an `mlflow server` with its own artifact store.

Two sweeps write into one database at once, one through the tracking server
(`tracking.uri=http://...`), one straight into PostgreSQL (`tracking.uri=postgresql://...`).
The first is SIGKILLed mid-sweep and re-run; a third person's sweep of the second one's
name is refused. Then every journal cell is in MLflow exactly once, complete, with its
artifacts; `pkb ui --uri` opens the server's sweeps; and the
database password, given only in PGPASSWORD, is nowhere in a run, an artifact or a sweep's
files. A password inside tracking.uri is refused before anything runs.

Everything is real: Debian's PostgreSQL, `mlflow server`, a Ray cluster, the sweep drivers
as processes, SIGKILL. scripts/install.sh --test installs PostgreSQL and psycopg as root.
"""

from __future__ import annotations

import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.driver.conftest import ray_head, scrubbed_env, sweep_cmd  # noqa: F401 (ray_head: a fixture)
from tests.kill import jsonl, kill_when
from tests.tracking.services import postgres, tracking_server

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

SETTINGS = ["model=reference", "eval.device=cpu", "eval.time_candidates=false", "sweep.progress=false"]
"""Untimed: what reaches the server and the database is the point, not the figures."""
KILLED = ["problems.ids=[allreduce,allgather]", "attempts=2", "sweep.name=team_killed"]
"""4 cells: killed after the first is recorded, then resumed."""
BESIDE = ["problems.ids=[allreduce]", "attempts=1", "sweep.name=team_beside"]


def _journal(workdir: Path, sweep: str) -> list[dict]:
    return jsonl(workdir / "sweeps" / sweep / "journal.jsonl")


def _cell_ids(records: list[dict]) -> list[str]:
    return [f"{k['model']}/{k['problem']}/{k['attempt']}/{k['mode']}" for k in (r["key"] for r in records)]


def _everything_logged(client, experiment_id: str, tmp: Path) -> str:
    """Every param, tag, metric key and artifact text of every run of an experiment, deleted
    runs too: what a secret must never be part of."""
    from mlflow.entities import ViewType

    parts = []
    for run in client.search_runs([experiment_id], run_view_type=ViewType.ALL, max_results=1000):
        parts += [*run.data.params.items(), *run.data.tags.items(), *run.data.metrics]
        local = Path(client.download_artifacts(run.info.run_id, "", str(tmp / run.info.run_id)))
        parts += [p.read_bytes().decode("utf-8", "replace") for p in local.rglob("*") if p.is_file()]
    return "\n".join(map(str, parts))


def test_two_sweeps_into_postgres_through_a_tracking_server_survive_a_kill(ray_head, tmp_path, monkeypatch):  # noqa: F811
    from mlflow.tracking import MlflowClient

    monkeypatch.setenv("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")  # a bar per download otherwise
    t0 = time.monotonic()
    cluster = [f"cluster.address={ray_head.address}"]
    with postgres() as pg, tracking_server(pg, tmp_path, scrubbed_env()) as server:
        killed_dir, beside_dir = tmp_path / "alice", tmp_path / "bob"
        killed_dir.mkdir()
        beside_dir.mkdir()
        # A password in the URI is refused at once, and not printed back.
        refused = subprocess.run(
            sweep_cmd(*SETTINGS, *BESIDE, f"tracking.uri=postgresql://{pg.user}:{pg.password}@{pg.host}:{pg.port}/x"),
            cwd=beside_dir, env=scrubbed_env(), capture_output=True, text=True, timeout=120)
        assert refused.returncode != 0 and "tracking.uri holds a password" in refused.stderr, refused.stderr
        assert pg.password not in refused.stdout + refused.stderr
        assert not (beside_dir / "sweeps").exists()

        # Two sweeps at once: one through the server, one straight into its database.
        through_server = [*SETTINGS, *KILLED, *cluster, f"tracking.uri={server.url}"]
        into_db = [*SETTINGS, *BESIDE, *cluster, f"tracking.uri={pg.uri()}"]
        db_env = scrubbed_env(PGPASSWORD=pg.password)
        killed = subprocess.Popen(sweep_cmd(*through_server), cwd=killed_dir, env=scrubbed_env(),
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        beside = subprocess.Popen(sweep_cmd(*into_db), cwd=beside_dir, env=db_env,
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            kill_when(killed, lambda: len(_journal(killed_dir, "team_killed")) >= 1, timeout_s=400)
            beside_out, _ = beside.communicate(timeout=400)
        finally:
            for proc in (killed, beside):
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
        assert beside.returncode == 0, beside_out
        recorded_before = len(_journal(killed_dir, "team_killed"))
        assert 1 <= recorded_before < 4
        rerun = subprocess.run(sweep_cmd(*through_server), cwd=killed_dir, env=scrubbed_env(),
                               capture_output=True, text=True, timeout=400)
        assert rerun.returncode == 0, rerun.stdout + rerun.stderr
        assert f"{recorded_before} already recorded" in rerun.stderr

        # A third person's sweep of bob's name, from another directory, is refused: it would
        # delete bob's runs as not in its own journal.
        carol_dir = tmp_path / "carol"
        carol_dir.mkdir()
        carol = subprocess.run(sweep_cmd(*SETTINGS, *BESIDE, *cluster, f"tracking.uri={server.url}"),
                               cwd=carol_dir, env=scrubbed_env(), capture_output=True, text=True, timeout=400)
        assert carol.returncode != 0 and "mirrors another sweep directory" in carol.stderr, carol.stderr

        client = MlflowClient(tracking_uri=server.url)
        for workdir, sweep, cells in ((killed_dir, "team_killed", 4), (beside_dir, "team_beside", 1)):
            records = _journal(workdir, sweep)
            ids = _cell_ids(records)
            assert len(ids) == cells and len(set(ids)) == cells
            exp = client.get_experiment_by_name(sweep)
            runs = client.search_runs([exp.experiment_id], "tags.`pkb.kind` = 'cell'", max_results=1000)
            assert sorted(r.data.tags["pkb.cell_id"] for r in runs) == sorted(ids)
            assert all(r.data.tags["pkb.complete"] == "true" for r in runs)
            sources = {f"{k['model']}/{k['problem']}/{k['attempt']}/{k['mode']}": r["generation"]["candidate_source"]
                       for r, k in ((r, r["key"]) for r in records)}
            for run in runs:  # each cell's files, read back through the server
                names = {a.path for a in client.list_artifacts(run.info.run_id)}
                assert "candidate.py" in names, names
                path = client.download_artifacts(run.info.run_id, "candidate.py", str(tmp_path / run.info.run_id))
                assert Path(path).read_text() == sources[run.data.tags["pkb.cell_id"]]
            parents = client.search_runs([exp.experiment_id], "tags.`pkb.kind` = 'sweep'")
            finished = [p for p in parents if p.info.status == "FINISHED"]
            assert len(finished) == 1
            assert {"heatmap.png", "leaderboard.md"} <= {a.path for a in client.list_artifacts(finished[0].info.run_id)}
        killed_parents = client.search_runs([client.get_experiment_by_name("team_killed").experiment_id],
                                            "tags.`pkb.kind` = 'sweep'")
        assert sorted(p.info.status for p in killed_parents) == ["FINISHED", "KILLED"]
        # The server kept the artifacts of the sweep that wrote through it (its artifact store),
        # not the sweep's working directory.
        assert any(server.artifacts.rglob("candidate.py"))
        assert not (killed_dir / "mlartifacts").exists()

        # The password went nowhere but PGPASSWORD.
        for exp_name in ("team_killed", "team_beside"):
            logged = _everything_logged(client, client.get_experiment_by_name(exp_name).experiment_id, tmp_path / "all")
            assert pg.password not in logged
        for workdir in (killed_dir, beside_dir):
            for path in (workdir / "sweeps").rglob("*"):
                if path.is_file():
                    assert pg.password.encode() not in path.read_bytes(), path
        assert pg.password not in beside_out + rerun.stdout + rerun.stderr

        # pkb ui --uri on the team's server: nothing to start, each sweep's page to open.
        ui = subprocess.run([sys.executable, "-m", "pkb_ray.cli", "ui", "--uri", server.url, "--no-browser",
                             "--start-timeout-s", "60"],
                            cwd=tmp_path, env=scrubbed_env(), capture_output=True, text=True, timeout=120)
        assert ui.returncode == 0, ui.stderr
        lines = ui.stdout.splitlines()
        assert lines[0].startswith(f"pkb ui: open {server.url}/"), ui.stdout
        urls = [line.split()[3] if line.startswith("pkb ui: open ") else line.split()[-1]
                for line in lines if server.url in line]
        assert len(urls) == 2, ui.stdout
        assert "'team_killed': 4 cells under its leaderboard" in ui.stdout or "sweep team_killed: " in ui.stdout
        for url in urls:
            with urllib.request.urlopen(url, timeout=30) as page:
                assert page.status == 200
        print(f"team tracking: {time.monotonic() - t0:.0f} s, {recorded_before} of 4 cells before the kill")


def test_a_server_behind_auth_takes_credentials_from_the_environment(tmp_path, monkeypatch):
    """MLflow's own login (basic auth) in front of the server: the tracker and `pkb ui --uri`
    get in with MLFLOW_TRACKING_USERNAME / MLFLOW_TRACKING_PASSWORD from the environment,
    `pkb ui` without them says the server refused, and the password is in no run."""
    from mlflow.tracking import MlflowClient

    from pkb_ray.tracking.mlflow_tracker import MlflowTracker
    from tests.helpers import make_result
    from tests.tracking.services import auth_server

    user, password = "pkb-admin", "pw-" + "x7Kq2mZ9vR4tLs8"
    with auth_server(tmp_path, scrubbed_env(), user, password) as url:
        monkeypatch.setenv("MLFLOW_TRACKING_USERNAME", user)
        monkeypatch.setenv("MLFLOW_TRACKING_PASSWORD", password)
        monkeypatch.setenv("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")
        leaky = make_result("reference", "allreduce")
        leaky.generation.response = f"a model that echoed the password {password} back"
        tracker = MlflowTracker(url, "team_auth", None, {"device": "cpu", "note": f"pw {password}"}, owner="a1")
        tracker.log_cell(leaky)
        tracker.close()
        client = MlflowClient(tracking_uri=url)
        exp = client.get_experiment_by_name("team_auth")
        runs = client.search_runs([exp.experiment_id], "tags.`pkb.kind` = 'cell'")
        assert len(runs) == 1 and runs[0].data.tags["pkb.complete"] == "true"
        assert password not in _everything_logged(client, exp.experiment_id, tmp_path / "all")

        ui = [sys.executable, "-m", "pkb_ray.cli", "ui", "--uri", url, "--no-browser", "--start-timeout-s", "30"]
        allowed = subprocess.run(ui, cwd=tmp_path, env=scrubbed_env(MLFLOW_TRACKING_USERNAME=user,
                                                                    MLFLOW_TRACKING_PASSWORD=password),
                                 capture_output=True, text=True, timeout=120)
        assert allowed.returncode == 0, allowed.stderr
        assert allowed.stdout.startswith(f"pkb ui: open {url}/#/experiments/{exp.experiment_id}/runs")
        assert "'team_auth': 1 cell under its leaderboard (2 runs)" in allowed.stdout
        assert "does not serve pkb's page" in allowed.stdout  # the auth app is MLflow's, not pkb's
        refused = subprocess.run(ui, cwd=tmp_path, env=scrubbed_env(), capture_output=True, text=True, timeout=120)
        assert refused.returncode == 1 and "refused the credentials (HTTP 401)" in refused.stderr, refused.stderr
