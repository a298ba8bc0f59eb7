"""A scripted OpenAI-compatible chat server that answers with tool calls, on 127.0.0.1.

Real HTTP (aiohttp, served from its own thread by tests/scripted_server.py), so litellm's function-calling path is
the one under test. `script(body) -> Turn` decides each answer from the conversation the
client sent; every request body is kept, in arrival order.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from aiohttp import web

from tests.scripted_server import ServingThread, serve_in_thread


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
        self._serving: ServingThread | None = None

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

    def __enter__(self) -> ToolServer:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_post("/v1/chat/completions", self._chat)
        self._serving = serve_in_thread(app, name="tool-server")
        self.port = self._serving.port
        return self

    def __exit__(self, *exc: object) -> None:
        if self._serving is not None:
            self._serving.stop()


def step_of(body: dict[str, Any]) -> int:
    """Which step a request is: 1 + the assistant messages already in it."""
    return 1 + sum(1 for m in body["messages"] if m["role"] == "assistant")


def tool_results(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [json.loads(m["content"]) for m in body["messages"] if m["role"] == "tool"]
