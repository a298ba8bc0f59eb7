"""`pkb ui`: the MLflow UI on a sweep's store, offline-safe, opened on the comparison view.

Plain `mlflow ui` never opens its port on a machine without internet: importing MLflow's
server pulls in litellm, whose price-table fetch from GitHub retries inside an import hook
(a deadlock, seen in a stack dump). Here the server runs with litellm's local price table
(LITELLM_LOCAL_MODEL_COST_MAP=True), one worker and no GenAI job runner (MLflow starts 4
workers and a job runner by default, each importing MLflow: on a 2-core machine that alone
took 45-52 s to the first HTTP 200, against the 30 s a user or CI waits).

The first URL it prints is the newest sweep's runs table in the sweep's view, reached through
ui_app.OPEN_PATH (no shared-view banner, no assistant panel, the leaderboard pinned on top;
ui_app.py says how); then the other sweeps'. With `--uri http(s)://...` (a team's tracking
server) it starts nothing and prints the same URLs on that server.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

from pkb_ray.tracking.rest import cell_run_count, experiments, serves_open_page, wait_until_up
from pkb_ray.tracking.runs_view import VIEW_KEY, VIEW_TAG
from pkb_ray.tracking.ui_app import APP_NAME, OPEN_PATH, RUNS_PAGE, UI_RUNS_PAGE, runs_fragment

__all__ = ["app_registered", "experiments", "open_url", "register", "runs_url", "server_command",
           "server_env", "wait_until_up"]

OFFLINE_ENV = {
    "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false",
}
"""What the MLflow server needs to start without network and without GenAI jobs."""


def app_registered() -> bool:
    """Whether MLflow can find ui_app as its `pkb` app: only an installed pkb_ray (pip
    install -e .) registers the entry point; a bare checkout on PYTHONPATH does not."""
    from importlib.metadata import entry_points

    return any(e.name == APP_NAME for e in entry_points(group="mlflow.app"))


def server_command(uri: str, host: str, port: int, with_app: bool = True) -> list[str]:
    # Warnings only: the server printed a line per HTTP request and its start-up chatter
    # around the one line pkb ui prints for the user (the URL to open).
    return [sys.executable, "-m", "mlflow", "server", "--backend-store-uri", uri,
            "--host", host, "--port", str(port), "--workers", "1",
            *(["--app-name", APP_NAME] if with_app else []),
            "--uvicorn-opts", "--no-access-log --log-level warning"]


def server_env(base: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ if base is None else base)
    env.update(OFFLINE_ENV)
    env.setdefault("MLFLOW_LOGGING_LEVEL", "WARNING")
    return env


def runs_url(base_url: str, experiment_id: str) -> str:
    """The experiment's runs table, in the model-training view, with the sweep's view
    (runs_view.py) as MLflow's shared view: a server without pkb's open page shows it so."""
    return base_url + runs_fragment(experiment_id, VIEW_KEY)


def open_url(base_url: str, experiment_id: str, with_app: bool = True) -> str:
    """What to open: ui_app's page on the server's origin, which goes on to runs_url with
    the assistant panel out of the way (runs_url itself where the app is not served)."""
    if not with_app:
        return runs_url(base_url, experiment_id)
    return f"{base_url}{OPEN_PATH}?experiment={experiment_id}"


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("ui", help="the MLflow UI on the sweeps' store, offline-safe")
    p.add_argument("--uri", default="sqlite:///mlflow.db",
                   help="tracking.uri of the sweeps (default sqlite:///mlflow.db): a store to serve "
                        "here, or an MLflow tracking server (http://HOST:PORT) to open")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=5000)
    p.add_argument("--start-timeout-s", type=float, default=120.0,
                   help="give up when the server has not answered by then")
    p.add_argument("--no-browser", dest="browser", action="store_false",
                   help="do not open a browser on the newest sweep's runs (opened only with a display)")
    p.set_defaults(handler=_run)


def _run(args: argparse.Namespace) -> int:
    from pkb_ray.config.validate import tracking_uri_errors

    for error in tracking_uri_errors(args.uri):
        print(f"pkb ui: {error.replace('tracking.uri', '--uri', 1)}", file=sys.stderr)
        return 2
    if args.uri.startswith(("http://", "https://")):
        return _open_server(args)
    base = f"http://{args.host}:{args.port}"
    # The server's own start-up lines (registry URI, security middleware, a Starlette
    # deprecation) go to a log, shown when it fails: the user's screen holds the URL to open.
    log_path = Path(tempfile.gettempdir()) / f"pkb-ui-{args.port}.log"
    log = open(log_path, "w", encoding="utf-8")
    # Its own process group, stopped as a whole below: the server's workers are its children.
    with_app = app_registered()
    if not with_app:
        print("pkb ui: pkb_ray is not installed (pip install -e .): MLflow shows a shared-view banner "
              "over the sweep, and its assistant panel may cover the speedup columns on a first visit",
              file=sys.stderr)
    proc = subprocess.Popen(server_command(args.uri, args.host, args.port, with_app), env=server_env(),
                            start_new_session=True, stdout=log, stderr=subprocess.STDOUT)
    log.close()
    # SIGTERM (a supervisor, `kill`) must stop the server too, not only this process: the
    # default action skips `finally` and left an orphaned server holding the port.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))
    try:
        try:
            took = wait_until_up(base, args.start_timeout_s, proc)
        except (TimeoutError, RuntimeError) as exc:
            tail = log_path.read_text(encoding="utf-8", errors="replace").splitlines()[-15:]
            print(f"pkb ui: {exc}; the server's log ({log_path}) ends:\n  " + "\n  ".join(tail),
                  file=sys.stderr)
            return 1
        newest = _print_sweeps(base, with_app)
        print(f"pkb ui: MLflow up in {took:.1f} s on {args.uri}; Ctrl-C stops it (log {log_path})",
              flush=True)
        if newest and args.browser and _has_display():
            import webbrowser

            webbrowser.open(newest)
        return proc.wait()
    except KeyboardInterrupt:
        return 0
    finally:
        _stop_group(proc)


def _open_server(args: argparse.Namespace) -> int:
    """A tracking server that runs elsewhere (a team's): nothing to start, its sweeps to open."""
    base = args.uri.rstrip("/")
    try:
        wait_until_up(base, args.start_timeout_s)
    except (TimeoutError, RuntimeError) as exc:
        print(f"pkb ui: {exc}", file=sys.stderr)
        return 1
    with_app = serves_open_page(base)
    newest = _print_sweeps(base, with_app)
    if not with_app:
        print("pkb ui: this server does not serve pkb's page, so MLflow shows a shared-view banner;\n"
              "  run it as `mlflow server --app-name pkb ...` with pkb_ray installed there", flush=True)
    if newest and args.browser and _has_display():
        import webbrowser

        webbrowser.open(newest)
    return 0


def _print_sweeps(base: str, with_app: bool) -> str | None:
    """Print the URL of each sweep's runs, the newest first; returns the newest's."""
    sweeps = sorted((e for e in experiments(base) if e.get("name") != "Default"),
                    key=lambda e: -int(e.get("last_update_time", 0)))
    if not sweeps:
        print(f"pkb ui: no sweep recorded in this store yet (MLflow at {base})", flush=True)
        return None
    # MLflow's own home page is its GenAI overview, not the runs: the first URL is the newest
    # sweep's runs table in its view (cells flat, the comparison's columns first).
    newest = open_url(base, sweeps[0]["experiment_id"], with_app)
    n = cell_run_count(base, sweeps[0]["experiment_id"])
    runs = n + len(pinned_runs(sweeps[0]))  # MLflow counts the pinned leaderboard run too
    page = RUNS_PAGE if with_app else UI_RUNS_PAGE
    # Short lines: the URL alone on the first (a terminal makes it one click), the rest below.
    print(f"pkb ui: open {newest}", flush=True)
    print(f"  the newest sweep, {sweeps[0]['name']!r}: {n} cell{'s' if n != 1 else ''} under its leaderboard "
          f"({runs} run{'s' if runs != 1 else ''})", flush=True)
    if runs > page:
        print(f"  MLflow loads {page} runs at a time: 'Load more' shows the rest", flush=True)
    for e in sweeps[1:]:
        print(f"  sweep {e['name']}: {open_url(base, e['experiment_id'], with_app)}", flush=True)
    return newest


def pinned_runs(experiment: dict) -> list[str]:
    """The runs the experiment's view pins (its newest leaderboard run), from its REST record."""
    tags = {t.get("key"): t.get("value") for t in experiment.get("tags", [])}
    try:
        return list(json.loads(tags.get(VIEW_TAG) or "{}").get("runsPinned", []))
    except (ValueError, AttributeError):
        return []


def _has_display() -> bool:
    """A graphical session to open a browser in (a headless server would get a text browser)."""
    return sys.platform == "darwin" or bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def _stop_group(proc: subprocess.Popen) -> None:
    for sig, wait_s in ((signal.SIGTERM, 10.0), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait_s)
            return
        except subprocess.TimeoutExpired:
            continue
