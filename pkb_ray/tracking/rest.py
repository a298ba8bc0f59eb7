"""What `pkb ui` asks an MLflow server over its REST API: whether it is up, its sweeps, their
cell counts, whether it serves pkb's page. Plain HTTP from this process, which never imports
MLflow (a second or more on a 2-core machine, before the first line the user reads).

Credentials come from the environment, as MLflow's own client takes them:
MLFLOW_TRACKING_USERNAME and MLFLOW_TRACKING_PASSWORD (basic auth) or MLFLOW_TRACKING_TOKEN.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import time
import urllib.error
import urllib.request
from typing import Any

from pkb_ray.tracking.runs_view import KIND_TAG
from pkb_ray.tracking.ui_app import OPEN_PATH


def auth_headers(environ: dict[str, str] | None = None) -> dict[str, str]:
    env = os.environ if environ is None else environ
    user, password = env.get("MLFLOW_TRACKING_USERNAME"), env.get("MLFLOW_TRACKING_PASSWORD")
    if user and password:
        token = base64.b64encode(f"{user}:{password}".encode()).decode()
        return {"Authorization": f"Basic {token}"}
    if env.get("MLFLOW_TRACKING_TOKEN"):
        return {"Authorization": f"Bearer {env['MLFLOW_TRACKING_TOKEN']}"}
    return {}


def _open(url: str, body: dict[str, Any] | None = None, timeout_s: float = 30.0) -> Any:
    headers = {**auth_headers(), **({"Content-Type": "application/json"} if body is not None else {})}
    req = urllib.request.Request(url, method="POST" if body is not None else "GET", headers=headers,
                                 data=json.dumps(body).encode() if body is not None else None)
    return urllib.request.urlopen(req, timeout=timeout_s)


def wait_until_up(base_url: str, timeout_s: float, proc: subprocess.Popen | None = None) -> float:
    """Seconds until `base_url` answers HTTP 200; raises TimeoutError (or RuntimeError when
    the server process exits first, or the server refuses the credentials)."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout_s:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"the MLflow server exited with status {proc.returncode}")
        try:
            with _open(base_url + "/", timeout_s=2) as resp:
                if resp.status == 200:
                    return time.monotonic() - t0
        except urllib.error.HTTPError as exc:
            if exc.code in (401, 403):
                raise RuntimeError(f"{base_url} refused the credentials (HTTP {exc.code}); set "
                                   "MLFLOW_TRACKING_USERNAME and MLFLOW_TRACKING_PASSWORD") from None
        except (urllib.error.URLError, ConnectionError, TimeoutError, OSError):
            pass
        time.sleep(0.2)
    raise TimeoutError(f"no HTTP 200 from {base_url} within {timeout_s:g} s")


def experiments(base_url: str) -> list[dict]:
    """The store's experiments."""
    with _open(base_url + "/ajax-api/2.0/mlflow/experiments/search?max_results=1000", timeout_s=10) as resp:
        return json.load(resp).get("experiments", [])


def cell_run_count(base_url: str, experiment_id: str) -> int:
    """The sweep's cell runs (paged): the count the journal holds, said beside the URL
    (MLflow's table says how many it has loaded: ui_app.RUNS_PAGE at a time)."""
    count, token = 0, None
    while True:
        body = {"experiment_ids": [experiment_id], "filter": f"tags.`{KIND_TAG}` = 'cell'",
                "max_results": 1000, **({"page_token": token} if token else {})}
        with _open(base_url + "/ajax-api/2.0/mlflow/runs/search", body) as resp:
            page = json.load(resp)
        count += len(page.get("runs", []))
        token = page.get("next_page_token")
        if not token:
            return count


def serves_open_page(base_url: str) -> bool:
    """Whether the server runs pkb's app (`mlflow server --app-name pkb`): its open page
    answers a request without an experiment with its own 400."""
    try:
        with _open(base_url + OPEN_PATH, timeout_s=10):
            return False
    except urllib.error.HTTPError as exc:
        return exc.code == 400 and exc.read(16).startswith(b"pkb ui:")
    except (urllib.error.URLError, OSError):
        return False
