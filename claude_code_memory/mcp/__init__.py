"""The MCP edge: OpenMemory's memory tools over SSE and Streamable HTTP.

Composition (done once by the app factory)::

    endpoint = create_mcp_endpoint(get_service=..., authenticate=...)
    app.router.routes.extend(endpoint.routes)
    # and inside the app's lifespan:
    async with endpoint.run():
        yield

or :func:`mount_mcp`, which does both for a Starlette/FastAPI app.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from starlette.applications import Starlette

from .lazy import LazyMcpEndpoint
from .paths import DEFAULT_MAX_BODY_BYTES

if TYPE_CHECKING:
    from .caller import GetService
    from .transport import Authenticate, McpEndpoint

__all__ = [
    "Caller",
    "McpEndpoint",
    "bind_caller",
    "build_server",
    "create_mcp_endpoint",
    "current_caller",
    "mount_mcp",
]


def __getattr__(name: str) -> Any:
    # The MCP SDK loads with these, on first use (see .lazy).
    if name in ("Caller", "bind_caller", "current_caller"):
        from . import caller

        return getattr(caller, name)
    if name == "build_server":
        from .server import build_server

        return build_server
    if name == "McpEndpoint":
        from .transport import McpEndpoint

        return McpEndpoint
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def create_mcp_endpoint(
    *,
    get_service: GetService,
    authenticate: Authenticate,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
) -> LazyMcpEndpoint:
    """The MCP server and its routes, built on the first request to one of them (see .lazy).
    ``get_service()`` is called on every tool call."""

    def build() -> McpEndpoint:
        from .server import build_server
        from .transport import McpEndpoint

        return McpEndpoint(
            lambda dialect: build_server(get_service, dialect), authenticate, max_body_bytes=max_body_bytes
        )

    return LazyMcpEndpoint(build)


def mount_mcp(
    app: Starlette,
    *,
    get_service: GetService,
    authenticate: Authenticate,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
) -> LazyMcpEndpoint:
    """Add the MCP routes to ``app`` and run the endpoint inside the app's existing lifespan."""
    endpoint = create_mcp_endpoint(
        get_service=get_service, authenticate=authenticate, max_body_bytes=max_body_bytes
    )
    app.router.routes.extend(endpoint.routes)
    app_lifespan = app.router.lifespan_context

    @asynccontextmanager
    async def lifespan(app_: Any) -> AsyncIterator[Any]:
        async with endpoint.run(), app_lifespan(app_) as state:
            yield state

    app.router.lifespan_context = lifespan
    return endpoint
