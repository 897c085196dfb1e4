"""The REST routers the server serves, in the order they are matched, and the few a first search
needs: ``ccmem serve`` answers those while it loads the others (api/warm_start.py).

The router modules are imported by name when they are included: a server that includes the
first ones only has not loaded the rest (their pydantic models and route signatures are a
tenth of a start).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, MutableMapping
from typing import Any

from fastapi import FastAPI
from starlette.routing import BaseRoute

#: Every module of api/routes/ with a router, in the order its routes are matched (browse's
#: /memories/... before memories' /memories/{memory_id}). browse, insights, me and tokens serve
#: the web UI (and anyone else): see docs/ui.md.
ROUTERS = (
    "browse",
    "memories",
    "apps",
    "stats",
    "config",
    "backup",
    "capture",
    "hooks",
    "memory_tool",
    "consent",
    "hygiene",
    "insights",
    "me",
    "tokens",
    "devices",
    "imports",
    "scopes",
    "entities",
    "trash",
    "storage",
    "profile",
    "tiers",
    "teams",
    "retention",
    "admin",
)
#: The routers of a first search and of Claude Code's hooks.
FIRST = ("memories", "hooks")
#: The requests the first routers answer alone (a route of theirs may need another router's
#: to be matched first: GET /memories/... is browse's before it is memories').
FIRST_REQUESTS = frozenset(
    {
        ("POST", "/api/v1/memories/search"),
        ("POST", "/api/v1/hooks/claude-code"),
        ("POST", "/api/v1/hooks/recall"),
    }
)
#: The MCP endpoint's routes are included with the first routers (mcp/paths.py).
MCP_PREFIX = "/mcp/"


def answered_first(scope: MutableMapping[str, Any]) -> bool:
    """Whether the first routers (and the MCP endpoint) answer this request as the whole app would."""
    path = scope.get("path", "")
    return (scope.get("method"), path) in FIRST_REQUESTS or path.startswith(MCP_PREFIX)


def include(app: FastAPI, names: Iterable[str]) -> dict[str, list[BaseRoute]]:
    """Include the named routers (importing their modules); the routes each added."""
    added: dict[str, list[BaseRoute]] = {}
    for name in names:
        module = importlib.import_module(f"{__package__}.routes.{name}")
        start = len(app.router.routes)
        app.include_router(module.router)
        added[name] = app.router.routes[start:]
    return added


class Routers:
    """``app``'s routers: every one at once, or the first ones now and the rest when
    :meth:`include_the_rest` is called. Either way the routes end up in the same order:
    the app's own (``/health``, the documentation), the routers', then what is added after them
    (the MCP endpoint, OAuth)."""

    def __init__(self, app: FastAPI, *, first_only: bool) -> None:
        self.app = app
        self._base = list(app.router.routes)
        self._included = include(app, FIRST if first_only else ROUTERS)
        self._tail_from = len(app.router.routes)
        #: What serves the rest of the routers later (None: every router is included).
        self.later: Callable[[], None] | None = self.include_the_rest if first_only else None

    def include_the_rest(self) -> None:
        """Import and include the routers left out, then put every route in its place: one
        assignment, so a request being matched meanwhile sees the old list or the new one."""
        tail = self.app.router.routes[self._tail_from :]  # the MCP endpoint's, OAuth's
        self._included.update(include(self.app, [n for n in ROUTERS if n not in self._included]))
        ordered = [route for name in ROUTERS for route in self._included[name]]
        self.app.router.routes = [*self._base, *ordered, *tail]
        self.later = None
