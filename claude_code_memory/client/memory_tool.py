"""Anthropic's memory tool for apps on the ``anthropic`` SDK, kept in our store.

:class:`RemoteMemoryTool` implements the SDK's ``BetaAbstractMemoryTool`` over
``POST /api/v1/memory-tool``, so an app hands it to the SDK's tool runner and the model's
``/memories`` directory lives on the memory server: the files are the user's memories,
redacted, searchable, shown in the web UI, exported and retained like any other::

    import anthropic
    from claude_code_memory.client.memory_tool import RemoteMemoryTool

    memory = RemoteMemoryTool("http://127.0.0.1:8765", token)     # token: ccmem token create
    runner = anthropic.Anthropic().beta.messages.tool_runner(
        model="claude-sonnet-4-5", max_tokens=1024, tools=[memory],
        messages=[{"role": "user", "content": "Remember that I prefer tabs."}],
    )
    for message in runner: ...

A command the server refuses raises the SDK's ``ToolError`` with the server's text, the
reference implementation's error wording, which the runner hands back to the model as an
``is_error`` tool result. A server that cannot be reached raises :class:`~..errors.Unavailable`
(the runner reports it to the model too). Needs the ``anthropic`` package (the ``anthropic``
extra of this package).
"""

from __future__ import annotations

import os
from typing import Any

import httpx
from anthropic.lib.tools import BetaAbstractMemoryTool, ToolError
from anthropic.types.beta import (
    BetaCacheControlEphemeralParam,
    BetaMemoryTool20250818CreateCommand,
    BetaMemoryTool20250818DeleteCommand,
    BetaMemoryTool20250818InsertCommand,
    BetaMemoryTool20250818RenameCommand,
    BetaMemoryTool20250818StrReplaceCommand,
    BetaMemoryTool20250818ViewCommand,
)
from pydantic import BaseModel

from ..config import TOKEN_ENV
from ..errors import Unauthorised, Unavailable

DEFAULT_URL = "http://127.0.0.1:8765"
#: The app the server records on files this class creates.
DEFAULT_APP = "anthropic-sdk"
PATH = "/api/v1/memory-tool"


class RemoteMemoryTool(BetaAbstractMemoryTool):
    """The model's memory directory on a claude-code-memory server, for the token's user.

    ``token`` defaults to ``$CCMEM_TOKEN``; ``user_id`` is only for the admin token, which
    must name the user it acts for. ``http_client`` replaces the default ``httpx.Client``
    (its base URL and headers are then the caller's to set).
    """

    def __init__(
        self,
        base_url: str = DEFAULT_URL,
        token: str | None = None,
        *,
        app: str = DEFAULT_APP,
        user_id: str | None = None,
        timeout: float = 30,
        cache_control: BetaCacheControlEphemeralParam | None = None,
        http_client: httpx.Client | None = None,
    ) -> None:
        super().__init__(cache_control=cache_control)
        token = token or os.environ.get(TOKEN_ENV)
        if http_client is None and not token:
            raise Unauthorised(f"RemoteMemoryTool needs a token: pass token= or set {TOKEN_ENV}")
        self.params: dict[str, str] = {"app": app, **({"user_id": user_id} if user_id else {})}
        self.http = http_client or httpx.Client(
            base_url=base_url.rstrip("/"), headers={"Authorization": f"Bearer {token}"}, timeout=timeout
        )

    def view(self, command: BetaMemoryTool20250818ViewCommand) -> str:
        return self.run(command)

    def create(self, command: BetaMemoryTool20250818CreateCommand) -> str:
        return self.run(command)

    def str_replace(self, command: BetaMemoryTool20250818StrReplaceCommand) -> str:
        return self.run(command)

    def insert(self, command: BetaMemoryTool20250818InsertCommand) -> str:
        return self.run(command)

    def delete(self, command: BetaMemoryTool20250818DeleteCommand) -> str:
        return self.run(command)

    def rename(self, command: BetaMemoryTool20250818RenameCommand) -> str:
        return self.run(command)

    def clear_all_memory(self) -> str:
        """Delete every file of the user's memory directory (their other memories stay)."""
        return self.run({"command": "clear_all_memory"})

    def run(self, command: BaseModel | dict[str, Any]) -> str:
        """One command on the server: its result text, or ``ToolError`` with the refusal's text."""
        body = command if isinstance(command, dict) else command.model_dump(mode="json", exclude_none=True)
        try:
            response = self.http.post(PATH, json=body, params=self.params)
        except httpx.HTTPError as exc:
            raise Unavailable(f"cannot reach the memory server ({exc.__class__.__name__})") from exc
        try:
            answer = response.json()
        except ValueError:
            answer = {}
        if response.status_code >= 400:
            detail = answer.get("detail") if isinstance(answer, dict) else None
            raise ToolError(
                detail if isinstance(detail, str) else f"memory server error {response.status_code}"
            )
        result = answer.get("result") if isinstance(answer, dict) else None
        if not isinstance(result, str):
            raise Unavailable(f"the memory server answered {PATH} without a result")
        return result

    def close(self) -> None:
        self.http.close()

    def __enter__(self) -> RemoteMemoryTool:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
