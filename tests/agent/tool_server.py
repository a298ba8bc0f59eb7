"""A scripted OpenAI-compatible chat server that answers with tool calls, on 127.0.0.1.

Real HTTP (aiohttp, its own thread and event loop), so litellm's function-calling path is
the one under test. `script(body) -> Turn` decides each answer from the conversation the
client sent; every request body is kept, in arrival order.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from aiohttp import web


@dataclass
class Turn:
    text: str = ""
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    """(tool name, arguments) in order."""


class ToolServer:
    def __init__(self, script: Callable[[dict[str, Any]], Turn]) -> None:
        self.script = script
        self.bodies: list[dict[str, Any]] = []
        self.port = 0
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    async def _chat(self, request: web.Request) -> web.Response:
        body = await request.json()
        with self._lock:
            self.bodies.append(body)
            n = len(self.bodies)
        turn = self.script(body)
        calls = [{"id": f"call_{n}_{i}", "type": "function",
                  "function": {"name": name, "arguments": json.dumps(args)}}
                 for i, (name, args) in enumerate(turn.calls)]
        message: dict[str, Any] = {"role": "assistant", "content": turn.text or None}
        if calls:
            message["tool_calls"] = calls
        prompt_chars = len(json.dumps(body.get("messages", [])))
        out = {"id": f"chatcmpl-{n}", "object": "chat.completion", "created": int(time.time()),
               "model": body.get("model", ""),
               "choices": [{"index": 0, "message": message,
                            "finish_reason": "tool_calls" if calls else "stop"}],
               "usage": {"prompt_tokens": prompt_chars // 4, "completion_tokens": 50,
                         "total_tokens": prompt_chars // 4 + 50}}
        return web.json_response(out)

    def __enter__(self) -> "ToolServer":
        ready = threading.Event()

        def run() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            asyncio.set_event_loop(loop)
            app = web.Application(client_max_size=64 * 1024 * 1024)
            app.router.add_post("/v1/chat/completions", self._chat)
            runner = web.AppRunner(app, access_log=None)
            loop.run_until_complete(runner.setup())
            site = web.TCPSite(runner, "127.0.0.1", 0)
            loop.run_until_complete(site.start())
            self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
            ready.set()
            loop.run_forever()
            loop.run_until_complete(runner.cleanup())
            loop.close()

        self._thread = threading.Thread(target=run, name="tool-server", daemon=True)
        self._thread.start()
        assert ready.wait(30), "the tool server did not start"
        return self

    def __exit__(self, *exc: object) -> None:
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
        if self._thread is not None:
            self._thread.join(10)


def step_of(body: dict[str, Any]) -> int:
    """Which step a request is: 1 + the assistant messages already in it."""
    return 1 + sum(1 for m in body["messages"] if m["role"] == "assistant")


def tool_results(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [json.loads(m["content"]) for m in body["messages"] if m["role"] == "tool"]
