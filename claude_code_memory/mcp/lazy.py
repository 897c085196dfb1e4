"""The MCP endpoint, built when its first request comes.

Loading the MCP SDK is a large part of the server's start-up (it defines every message of two
protocol versions as a pydantic model), and a server that no MCP client talks to — one that
serves REST, the web UI or hooks, and most servers a test run starts — never needs it. The
routes exist from the start; the first request to one of them builds the endpoint (the SDK is
imported off the event loop) and starts its Streamable HTTP machinery inside the app's lifespan,
where :meth:`LazyMcpEndpoint.run` keeps a task group for it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import anyio
import anyio.abc
import anyio.to_thread
from starlette.routing import BaseRoute, Route
from starlette.types import ASGIApp, Receive, Scope, Send

from .paths import ROUTES

if TYPE_CHECKING:
    from .transport import McpEndpoint


class LazyMcpEndpoint:
    """:class:`~.transport.McpEndpoint`'s routes and ``run()``, the endpoint made by ``build()``
    on first use."""

    def __init__(self, build: Callable[[], McpEndpoint]) -> None:
        self._build = build
        self._apps: dict[str, ASGIApp] | None = None
        self._building = anyio.Lock()
        self._tasks: anyio.abc.TaskGroup | None = None

    @property
    def routes(self) -> list[BaseRoute]:
        return [Route(path, _Forward(self, kind), name=name) for path, name, kind in ROUTES]

    @asynccontextmanager
    async def run(self) -> AsyncIterator[None]:
        """Enter once per app lifespan: an endpoint built meanwhile runs until it ends."""
        async with anyio.create_task_group() as tasks:
            self._tasks = tasks
            try:
                yield
            finally:
                self._tasks, self._apps = None, None
                tasks.cancel_scope.cancel()

    async def app(self, kind: str) -> ASGIApp:
        if self._apps is None:
            async with self._building:
                if self._apps is None:
                    if self._tasks is None:
                        raise RuntimeError("the MCP endpoint serves only inside the app's lifespan")
                    endpoint = await anyio.to_thread.run_sync(self._build)
                    await self._tasks.start(_serve, endpoint)
                    self._apps = endpoint.apps
        return self._apps[kind]


async def _serve(endpoint: McpEndpoint, *, task_status: Any = anyio.TASK_STATUS_IGNORED) -> None:
    async with endpoint.run():
        task_status.started()
        await anyio.sleep_forever()


class _Forward:
    """A route's ASGI app until the endpoint exists, then the endpoint's own for that route."""

    def __init__(self, endpoint: LazyMcpEndpoint, kind: str) -> None:
        self.endpoint = endpoint
        self.kind = kind

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        app = await self.endpoint.app(self.kind)
        await app(scope, receive, send)
