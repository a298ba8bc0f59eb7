"""The server `pkb ui` runs: MLflow's own app, with one page of ours in front of it.

`OPEN_PATH` is the page `pkb ui` says to open. On the server's own origin (localStorage is
per origin) it copies the sweep's view (runs_view.py, kept in an experiment tag) into the
browser's saved view of that experiment and goes on to the runs table: the sweep opens in
its view with the leaderboard pinned on top, and with no "You're viewing a shared view"
banner, which MLflow shows over any view opened by `?viewStateShareKey=`. A browser keeps
its own changes to the view (columns moved, resized) until pkb's layout itself changes; a
new invocation only moves the pin to its own parent run.

The same page records that MLflow's assistant panel has been opened once. MLflow 3.17 opens
it on a browser's first visit to a server on localhost, 330 px of a 1280 px window over the
comparison's columns, and no server setting turns that off; the user can still open it from
its button, and a browser that already has the key keeps its own choice.

MLflow's runs table also asks the server for 100 runs at a time and says "100 matching runs"
of a sweep of 107 until "Load more" is clicked. `widen_runs_page` asks for RUNS_PAGE instead
when the UI asks for its page of 100, so the count on screen is the sweep's.

Registered as MLflow's `mlflow.app` plugin `pkb` (pyproject.toml), so `mlflow server
--app-name pkb` serves it with MLflow's own start-up (store, workers, security middleware).
"""

from __future__ import annotations

import html
import json
import re
from typing import Any, Awaitable, Callable

OPEN_PATH = "/pkb/open"
EXPERIMENT_GET = "/ajax-api/2.0/mlflow/experiments/get"
APP_NAME = "pkb"
ASSISTANT_OPENED_KEY = "mlflow.assistant.fab.autoOpenedOnFirstLoad_v1"
"""The UI's record that it auto-opened the assistant once (its useLocalStorage hook stores
`<key>_v<version>` as JSON). Read from MLflow 3.17.2's bundle; the browser test
(tests/tracking/test_ui_browser.py) fails if a new MLflow renames it."""

SAVED_VIEW_KEY = "MLflowLocalStorage-1.1-ExperimentPage-{ids}-ReactComponentState"
"""Where MLflow 3.17.2's UI keeps its saved view of an experiment page (LocalStorageUtils,
version 1.1; `{ids}` is the JSON list of the page's experiment ids). The browser test
fails if a new MLflow moves it: the page would then open with MLflow's default columns."""
LAYOUT_MARK_KEY = "pkb.viewLayout.{id}"
"""What pkb last wrote there: the view less its pin, to tell pkb's changes from the user's."""

UI_RUNS_PAGE = 100
"""What MLflow 3.17's runs table asks for per page (max_results of runs/search)."""
RUNS_PAGE = 5000
"""What pkb ui asks for instead: every cell of a 40-model x 108-problem sweep at k=1 in one
page (ag-grid draws only the rows on screen); larger sweeps still get "Load more"."""
RUNS_SEARCH_PATHS = ("/ajax-api/2.0/mlflow/runs/search",)
"""The UI's own path: a REST client (/api/2.0/...) gets the page size it asked for."""
MAX_SEARCH_BODY = 1 << 20

_EXPERIMENT_ID = re.compile(r"[0-9]{1,19}")


def runs_fragment(experiment_id: str, view_key: str) -> str:
    """The runs table of one experiment in the model-training view with a saved view."""
    return f"/#/experiments/{experiment_id}/runs?workflowType=machine_learning&viewStateShareKey={view_key}"


def open_page(experiment_id: str, view_key: str) -> str:
    """The page that puts the sweep's view in place and goes on to its runs table (the
    shared-view link where the experiment has no view tag or the request fails)."""
    shared = runs_fragment(experiment_id, view_key)
    plain = shared.split("&viewStateShareKey=")[0]
    js = {
        "id": experiment_id,
        "assistant": ASSISTANT_OPENED_KEY,
        "api": f"{EXPERIMENT_GET}?experiment_id={experiment_id}",
        "tag": f"mlflow.sharedViewState.{view_key}",
        "state": SAVED_VIEW_KEY.format(ids=json.dumps([experiment_id])),
        "mark": LAYOUT_MARK_KEY.format(id=experiment_id),
        "plain": plain,
        "shared": shared,
    }
    return (
        "<!doctype html><html><head><meta charset='utf-8'><title>pkb ui</title></head><body>"
        "<script>"
        f"const P = {json.dumps(js)};"
        "const S = window.localStorage;"
        "try { if (S.getItem(P.assistant) === null) S.setItem(P.assistant, 'true'); } catch (e) {}"
        "fetch(P.api, {credentials: 'same-origin'})"
        ".then(r => { if (!r.ok) throw new Error(r.status); return r.json(); })"
        ".then(body => {"
        " const tag = (body.experiment.tags || []).find(t => t.key === P.tag);"
        " if (!tag) throw new Error('no view');"
        " const view = JSON.parse(tag.value);"
        " const layout = JSON.stringify({...view, runsPinned: []});"
        " const saved = S.getItem(P.state);"
        " if (saved === null || S.getItem(P.mark) !== layout) { S.setItem(P.state, tag.value); }"
        " else { S.setItem(P.state, JSON.stringify({...JSON.parse(saved), runsPinned: view.runsPinned})); }"
        " S.setItem(P.mark, layout);"
        " location.replace(P.plain);"
        "})"
        ".catch(() => location.replace(P.shared));"
        "</script>"
        f"<noscript><a href='{html.escape(shared, quote=True)}'>the sweep's runs</a></noscript>"
        "</body></html>")


Asgi = Callable[[dict, Callable[[], Awaitable[dict]], Callable[[dict], Awaitable[None]]], Awaitable[None]]


def create_app() -> Asgi:
    """MLflow's ASGI app with OPEN_PATH answered first (`?experiment=<id>[&view=<key>]`)."""
    from urllib.parse import parse_qs

    from mlflow.server.fastapi_app import app as mlflow_app

    from pkb_ray.tracking.runs_view import VIEW_KEY

    async def app(scope: dict, receive: Any, send: Any) -> None:
        if scope.get("type") == "http" and scope.get("method") == "POST" and scope.get("path") in RUNS_SEARCH_PATHS:
            scope, receive = await widen_runs_page(scope, receive)
        if scope.get("type") != "http" or scope.get("path") != OPEN_PATH:
            await mlflow_app(scope, receive, send)
            return
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
        experiment = (query.get("experiment") or [""])[0]
        # Only an id goes into the page: anything else would be a script injection or an
        # open redirect from a link someone was sent.
        if not _EXPERIMENT_ID.fullmatch(experiment):
            await _respond(send, 400, "text/plain", b"pkb ui: ?experiment=<numeric id> is required\n")
            return
        await _respond(send, 200, "text/html; charset=utf-8", open_page(experiment, VIEW_KEY).encode())

    return app


async def widen_runs_page(scope: dict, receive: Any) -> tuple[dict, Any]:
    """The request with max_results UI_RUNS_PAGE raised to RUNS_PAGE; any other request (a
    client's own page size, a body that is not JSON, one over MAX_SEARCH_BODY) goes on as
    it came, byte for byte."""
    chunks, size, more = [], 0, True
    while more:
        message = await receive()
        if message["type"] != "http.request":  # the client went away: MLflow sees it too
            return scope, _replay([message], receive)
        chunks.append(message.get("body", b""))
        size += len(chunks[-1])
        more = message.get("more_body", False)
        if size > MAX_SEARCH_BODY:
            return scope, _replay([{"type": "http.request", "body": b"".join(chunks), "more_body": more}], receive)
    body = b"".join(chunks)
    try:
        request = json.loads(body)
    except ValueError:
        request = None
    if isinstance(request, dict) and request.get("max_results") == UI_RUNS_PAGE:
        request["max_results"] = RUNS_PAGE
        body = json.dumps(request).encode()
        headers = [(k, v) for k, v in scope.get("headers", []) if k.lower() != b"content-length"]
        scope = {**scope, "headers": headers + [(b"content-length", str(len(body)).encode())]}
    return scope, _replay([{"type": "http.request", "body": body, "more_body": False}], receive)


def _replay(messages: list[dict], then: Any) -> Any:
    """An ASGI receive() that gives `messages`, then defers to `then` (the server's own,
    which says when the client goes away)."""
    queue = list(messages)

    async def receive() -> dict:
        return queue.pop(0) if queue else await then()

    return receive


async def _respond(send: Any, status: int, content_type: str, body: bytes) -> None:
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", content_type.encode()), (b"cache-control", b"no-store"),
                            (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})
