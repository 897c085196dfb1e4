"""A fake OpenAI-compatible Chat Completions endpoint on 127.0.0.1 (a hosted LLM cannot run here).

It speaks the real wire format: ``POST /v1/chat/completions`` with ``{"model", "messages": [...]}``
answers a ``chat.completion`` object (``id``, ``object``, ``created``, ``model``, ``choices``
with ``index``, ``message: {role, content}``, ``finish_reason``; ``usage``), as OpenAI's API
does for a non-streamed request; a request without ``model`` or ``messages`` gets OpenAI's
400 error shape, a wrong bearer token its 401. Every request is recorded (body and headers).
The answer's text is :attr:`FakeOpenAI.reply`.

uvicorn runs in a thread of the test process, on a port the OS picks.
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from .threaded_server import ThreadedServer


@dataclass
class FakeOpenAI:
    reply: str = "Summary from the fake model."
    api_key: str | None = None
    requests: list[dict[str, Any]] = field(default_factory=list)
    port: int = 0
    _server: ThreadedServer | None = None
    _ids: Any = field(default_factory=lambda: itertools.count(1))

    @property
    def base_url(self) -> str:
        """What ``reflection.llm.base_url`` is set to (OpenAI's ``/v1`` prefix included)."""
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> FakeOpenAI:
        app = Starlette(routes=[Route("/v1/chat/completions", self._completions, methods=["POST"])])
        self._server = ThreadedServer(app, name="fake-openai").start()
        self.port = self._server.port
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.stop()
            self._server = None

    def __enter__(self) -> FakeOpenAI:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    async def _completions(self, request: Request) -> JSONResponse:
        body = await request.json()
        self.requests.append({"body": body, "headers": dict(request.headers)})
        if self.api_key is not None and request.headers.get("authorization") != f"Bearer {self.api_key}":
            return _error(401, "Incorrect API key provided.", "invalid_request_error", "invalid_api_key")
        if not isinstance(body, dict) or "model" not in body or not body.get("messages"):
            return _error(400, "you must provide a model parameter", "invalid_request_error", None)
        return JSONResponse(
            {
                "id": f"chatcmpl-fake{next(self._ids)}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": body["model"],
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": self.reply, "refusal": None},
                        "logprobs": None,
                        "finish_reason": "stop",
                    }
                ],
                "usage": {"prompt_tokens": 100, "completion_tokens": 12, "total_tokens": 112},
                "system_fingerprint": "fp_fake",
            }
        )


def _error(status: int, message: str, kind: str, code: str | None) -> JSONResponse:
    return JSONResponse({"error": {"message": message, "type": kind, "param": None, "code": code}}, status)
