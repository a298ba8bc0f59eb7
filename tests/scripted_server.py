"""A scripted OpenAI-compatible chat server on 127.0.0.1, for tests and benchmarks.

Real HTTP (aiohttp, in its own thread and event loop), so the client under test goes
through the real litellm path. Replies are scripted per model name: a queue of `Reply`
values is consumed first, then the model's default (or the server's default) answers.
The server records every request (arrival and end times, status, the Authorization
header) and the most requests it ever held at once.

    with ScriptedServer() as srv:
        srv.script("flaky", [Reply(status=500), Reply(text=CODE)])
        cfg = ModelConfig(name="flaky", provider="openai_compatible", model_id="flaky", api_base=srv.url)
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections import defaultdict, deque
from dataclasses import dataclass, field
from typing import Any, Callable

from aiohttp import web

DEFAULT_ANSWER = """Here is the kernel.

```python
import torch


def solution(x: torch.Tensor) -> torch.Tensor:
    return x.clone()
```
"""


@dataclass
class ServingThread:
    """An aiohttp app served by its own thread and event loop (see `serve_in_thread`)."""

    port: int
    loop: asyncio.AbstractEventLoop
    thread: threading.Thread

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)


def serve_in_thread(app: web.Application, host: str = "127.0.0.1", port: int = 0, *,
                    name: str = "test-server", backlog: int = 128) -> ServingThread:
    """Serve `app` on host:port (0: any free port) from a daemon thread with its own event
    loop, so the client under test can block in this thread; raises what start-up raised."""
    ready = threading.Event()
    started: list[ServingThread] = []
    errors: list[BaseException] = []

    def run() -> None:
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        runner = web.AppRunner(app, access_log=None)
        try:
            loop.run_until_complete(runner.setup())
            site = web.TCPSite(runner, host, port, backlog=backlog)
            loop.run_until_complete(site.start())
            bound = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        except BaseException as e:  # noqa: BLE001: reported to the caller
            errors.append(e)
            ready.set()
            loop.close()
            return
        started.append(ServingThread(bound, loop, threading.current_thread()))
        ready.set()
        loop.run_forever()
        loop.run_until_complete(runner.cleanup())
        loop.close()

    threading.Thread(target=run, name=name, daemon=True).start()
    if not ready.wait(30):
        raise TimeoutError(f"{name} did not start within 30 s")
    if errors:
        raise errors[0]
    return started[0]


@dataclass
class Reply:
    """One scripted answer."""

    status: int = 200
    text: str = DEFAULT_ANSWER
    delay_s: float = 0.0
    """Wait this long before answering (a slow model, or a hang longer than the timeout)."""
    headers: dict[str, str] = field(default_factory=dict)
    raw_body: str | None = None
    """Send this body verbatim instead of a chat completion (malformed JSON)."""
    prompt_tokens: int | None = None
    completion_tokens: int | None = None


@dataclass
class RequestRecord:
    model: str
    t_start: float
    t_end: float = 0.0
    status: int = 0
    authorization: str = ""
    body: dict[str, Any] = field(default_factory=dict)


class ScriptedServer:
    def __init__(self, host: str = "127.0.0.1", port: int = 0,
                 default: Reply | Callable[[dict[str, Any]], Reply] | None = None):
        self.host, self.port = host, port
        self.default = default or Reply()
        self.defaults: dict[str, Reply | Callable[[dict[str, Any]], Reply]] = {}
        self.queues: dict[str, deque[Reply]] = defaultdict(deque)
        self.requests: list[RequestRecord] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()
        self._serving: ServingThread | None = None
        self._n = 0

    # -- scripting ---------------------------------------------------------------------------
    def script(self, model: str, replies: list[Reply]) -> None:
        """Queue replies for `model` (the name the client sends, without `openai/`)."""
        with self._lock:
            self.queues[model].extend(replies)

    def set_default(self, model: str, reply: Reply | Callable[[dict[str, Any]], Reply]) -> None:
        self.defaults[model] = reply

    def reset(self) -> None:
        with self._lock:
            self.queues.clear()
            self.defaults.clear()
            self.requests.clear()
            self.max_in_flight = self.in_flight

    def requests_for(self, model: str) -> list[RequestRecord]:
        with self._lock:
            return [r for r in self.requests if r.model == model]

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    # -- serving -----------------------------------------------------------------------------
    def _next_reply(self, model: str, body: dict[str, Any]) -> Reply:
        with self._lock:
            q = self.queues.get(model)
            if q:
                return q.popleft()
        d = self.defaults.get(model, self.default)
        return d(body) if callable(d) else d

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        model = str(body.get("model", ""))
        rec = RequestRecord(model=model, t_start=time.time(),
                            authorization=request.headers.get("Authorization", ""), body=body)
        with self._lock:
            self.requests.append(rec)
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            self._n += 1
            n = self._n
        try:
            reply = self._next_reply(model, body)
            if reply.delay_s:
                await asyncio.sleep(reply.delay_s)
            rec.status = reply.status
            if reply.raw_body is not None:
                return web.Response(status=reply.status, text=reply.raw_body,
                                    content_type="application/json", headers=reply.headers)
            if reply.status != 200:
                err = {"error": {"message": f"scripted {reply.status}", "type": "scripted",
                                 "code": str(reply.status)}}
                return web.json_response(err, status=reply.status, headers=reply.headers)
            prompt_chars = sum(len(str(m.get("content", ""))) for m in body.get("messages", []))
            pt = reply.prompt_tokens if reply.prompt_tokens is not None else prompt_chars // 4
            ct = reply.completion_tokens if reply.completion_tokens is not None else len(reply.text) // 4
            out = {
                "id": f"chatcmpl-{n}", "object": "chat.completion", "created": int(time.time()),
                "model": model,
                "choices": [{"index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": reply.text}}],
                "usage": {"prompt_tokens": pt, "completion_tokens": ct, "total_tokens": pt + ct},
            }
            return web.Response(text=json.dumps(out), content_type="application/json",
                                headers=reply.headers)
        finally:
            rec.t_end = time.time()
            with self._lock:
                self.in_flight -= 1

    async def _stats(self, request: web.Request) -> web.Response:
        with self._lock:
            return web.json_response({"requests": len(self.requests), "in_flight": self.in_flight,
                                      "max_in_flight": self.max_in_flight})

    def start(self) -> ScriptedServer:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_post("/chat/completions", self._chat)
        app.router.add_get("/stats", self._stats)
        self._serving = serve_in_thread(app, self.host, self.port, name="scripted-openai-server", backlog=1024)
        self.port = self._serving.port
        return self

    def stop(self) -> None:
        if self._serving is not None:
            self._serving.stop()

    def __enter__(self) -> ScriptedServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def main() -> None:
    """Serve in this process until killed: `python -m tests.scripted_server
    --delay-s 2` prints `PORT <n>` once listening (benchmarks run it apart from the client,
    as a real provider is, so the two do not share one interpreter lock)."""
    import argparse

    ap = argparse.ArgumentParser(description=main.__doc__)
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--delay-s", type=float, default=0.0)
    args = ap.parse_args()
    srv = ScriptedServer(port=args.port, default=Reply(delay_s=args.delay_s)).start()
    print(f"PORT {srv.port}", flush=True)
    while True:  # until SIGTERM / SIGINT ends the process
        time.sleep(3600)


if __name__ == "__main__":
    main()
