"""The server while it starts (api/warm_start.py): ``/health`` answers at once, a request that
arrives early waits for the application and is answered by it, a failed build answers 503 and
stops the server; the background jobs wait for the first answer (api/app.py ``jobs_after``).

Driven in process through the ASGI protocol itself: uvicorn's lifespan messages by hand, the
requests through httpx's ASGI transport."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.testclient import TestClient

from claude_code_memory.api.warm_start import WarmStart


class Lifespan:
    """uvicorn's side of the lifespan protocol, for one application."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.inbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.outbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.task: asyncio.Task[None] | None = None

    async def start(self) -> dict[str, Any]:
        scope = {"type": "lifespan", "asgi": {"version": "3.0"}, "state": {}}
        self.task = asyncio.create_task(self.app(scope, self.inbox.get, self.outbox.put))
        await self.inbox.put({"type": "lifespan.startup"})
        return await asyncio.wait_for(self.outbox.get(), 10)

    async def stop(self) -> dict[str, Any]:
        await self.inbox.put({"type": "lifespan.shutdown"})
        message = await asyncio.wait_for(self.outbox.get(), 10)
        assert self.task is not None
        await asyncio.wait_for(self.task, 10)
        return message


def real_app(events: list[str]) -> Starlette:
    """The application built behind the front: a real Starlette app with a lifespan of its own."""

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        events.append("app started")
        yield
        events.append("app stopped")

    async def search(request: Request) -> JSONResponse:
        return JSONResponse({"results": [(await request.json())["query"]]})

    async def health(request: Request) -> JSONResponse:
        return JSONResponse({"status": "ok"})

    routes = [Route("/search", search, methods=["POST"]), Route("/health", health)]
    return Starlette(routes=routes, lifespan=lifespan)


async def _until(condition: Any, seconds: float = 10) -> None:
    deadline = asyncio.get_running_loop().time() + seconds
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, "timed out"
        await asyncio.sleep(0.01)


def test_health_answers_while_the_app_builds_and_an_early_search_waits_for_it() -> None:
    release, events = threading.Event(), []

    def build() -> Any:
        events.append("build started")
        release.wait(10)
        return real_app(events)

    front = WarmStart(build, {"service": "claude-code-memory", "version": "1"})

    async def run() -> None:
        lifespan = Lifespan(front)
        assert await lifespan.start() == {"type": "lifespan.startup.complete"}  # at once: the port binds
        transport = httpx.ASGITransport(app=front)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            await _until(lambda: "build started" in events)
            health = await client.get("/health")
            assert health.status_code == 503
            assert health.json() == {"service": "claude-code-memory", "version": "1", "status": "starting"}

            early = asyncio.create_task(client.post("/search", json={"query": "early"}))
            await asyncio.sleep(0.2)
            assert not early.done(), "a request before the app is built must wait for it"
            assert front.answered is not None and not front.answered.is_set()

            release.set()
            response = await asyncio.wait_for(early, 10)
            assert response.status_code == 200 and response.json() == {"results": ["early"]}
            assert events == ["build started", "app started"]  # its lifespan ran before it answered
            assert front.answered.is_set()
            assert (await client.get("/health")).json() == {"status": "ok"}  # the app's own now
        assert await lifespan.stop() == {"type": "lifespan.shutdown.complete"}
        assert events[-1] == "app stopped"
        assert front.failure is None

    asyncio.run(run())


def test_a_failed_build_answers_503_stops_the_server_and_keeps_the_error() -> None:
    release = threading.Event()
    stopped: list[bool] = []

    def build() -> Any:
        release.wait(10)
        raise ValueError("the model files are missing")

    front = WarmStart(build, {"service": "claude-code-memory"})
    front.on_failure = lambda: stopped.append(True)

    async def run() -> None:
        lifespan = Lifespan(front)
        await lifespan.start()
        transport = httpx.ASGITransport(app=front)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            waiting = asyncio.create_task(client.post("/search", json={"query": "q"}))
            await asyncio.sleep(0.1)
            release.set()
            response = await asyncio.wait_for(waiting, 10)
        assert response.status_code == 503
        assert stopped == [True]
        assert await lifespan.stop() == {"type": "lifespan.shutdown.complete"}

    asyncio.run(run())
    assert isinstance(front.failure, ValueError) and "model files" in str(front.failure)


def test_a_stop_while_the_app_builds_waits_for_it_and_runs_its_clean_up() -> None:
    release, events = threading.Event(), []

    def build() -> Any:
        release.wait(10)
        return real_app(events)

    front = WarmStart(build, {})

    async def run() -> None:
        lifespan = Lifespan(front)
        await lifespan.start()
        stopping = asyncio.create_task(lifespan.stop())
        await asyncio.sleep(0.1)
        assert not stopping.done()
        release.set()
        assert await asyncio.wait_for(stopping, 10) == {"type": "lifespan.shutdown.complete"}

    asyncio.run(run())
    assert events == ["app started", "app stopped"]  # the stores it opened are closed


def test_what_is_left_for_later_loads_once_a_request_needs_it_and_first_requests_do_not_wait() -> None:
    release, events = threading.Event(), []

    def later() -> None:
        events.append("later started")
        release.wait(10)
        events.append("later done")

    def build() -> Any:
        front.later, front.first = later, lambda scope: scope["path"] == "/search"
        return real_app(events)

    front = WarmStart(build, {}, grace_seconds=30)

    async def run() -> None:
        lifespan = Lifespan(front)
        await lifespan.start()
        transport = httpx.ASGITransport(app=front)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            for _ in range(500):  # the app's own /health, before anything is left to load
                health = await client.get("/health")
                if health.status_code == 200:
                    break
                await asyncio.sleep(0.01)
            assert health.json() == {"status": "ok"}
            assert "later started" not in events, "a first request must not wait for what is left"
            first = await client.post("/search", json={"query": "first"})
            assert first.status_code == 200
            await _until(lambda: "later started" in events)  # the first answer sets it going
            other = asyncio.create_task(client.get("/other"))
            await asyncio.sleep(0.2)
            assert not other.done(), "a request outside the first ones waits for what is left"
            release.set()
            assert (await asyncio.wait_for(other, 10)).status_code == 404  # answered by the app
            assert "later done" in events and front.serving
        await lifespan.stop()

    asyncio.run(run())


def test_a_request_that_needs_what_is_left_loads_it_before_the_grace_is_over() -> None:
    ran: list[str] = []

    def build() -> Any:
        front.later, front.first = (lambda: ran.append("later")), (lambda scope: False)
        return real_app([])

    front = WarmStart(build, {}, grace_seconds=60)

    async def run() -> None:
        lifespan = Lifespan(front)
        await lifespan.start()
        transport = httpx.ASGITransport(app=front)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            response = await asyncio.wait_for(client.post("/search", json={"query": "q"}), 10)
        assert response.status_code == 200 and ran == ["later"]
        await lifespan.stop()

    asyncio.run(run())


@pytest.mark.integration
def test_routes_later_serves_the_first_search_then_every_route_in_the_same_order(tmp_path: Path) -> None:
    """``create_app(routes_later=True)``: the search and hook routes (and /health, MCP) at once;
    after ``app.state.routes_later()`` the very routes, in the very order, of an app built whole."""
    from claude_code_memory.api.app import create_app
    from claude_code_memory.api.route_table import answered_first
    from tests.support.parts import settings_for

    def table(app: Any) -> list[tuple[str, tuple[str, ...]]]:
        """Every route as (path, methods), in the order they are matched; an included router's
        routes where the router is."""
        rows = []
        for route in app.routes:
            router = getattr(route, "original_router", None)
            for inner in router.routes if router is not None else [route]:  # paths with the prefix
                rows.append((inner.path, tuple(sorted(getattr(inner, "methods", None) or ()))))
        return rows

    whole = create_app(settings_for(tmp_path / "whole"))
    assert whole.state.routes_later is None
    first = create_app(settings_for(tmp_path / "first"), routes_later=True)
    try:
        paths = {path for path, _ in table(first)}
        assert "/api/v1/memories/search" in paths and "/api/v1/hooks/claude-code" in paths
        assert "/health" in paths and any(path.startswith("/mcp/") for path in paths)
        assert "/api/v1/teams" not in paths and "/api/v1/memories/browse" not in paths
        for method, path in (("POST", "/api/v1/memories/search"), ("POST", "/api/v1/hooks/claude-code")):
            assert answered_first({"type": "http", "method": method, "path": path})
        assert not answered_first({"type": "http", "method": "GET", "path": "/api/v1/memories/search"})
        with TestClient(first) as client:
            assert client.get("/api/v1/teams").status_code == 404  # not served yet
            first.state.routes_later()
            assert table(first) == table(whole)
            assert client.get("/api/v1/teams").status_code == 401  # served: it wants a token
    finally:
        first.state.parts.close()
        whole.state.parts.close()


@pytest.mark.integration
def test_the_jobs_wait_for_what_jobs_after_waits_for(tmp_path: Path) -> None:
    """``create_app(jobs_after=...)``: the start-up reconciliation does not run before it returns
    (the first answered request, in ``ccmem serve``), and runs after."""
    from claude_code_memory.api.app import create_app
    from tests.support.parts import settings_for

    async def run() -> None:
        gate = asyncio.Event()

        async def jobs_after() -> None:
            await gate.wait()

        app = create_app(settings_for(tmp_path / "data"), jobs_after=jobs_after)
        parts = app.state.parts
        lifespan = Lifespan(app)
        assert await lifespan.start() == {"type": "lifespan.startup.complete"}
        await asyncio.sleep(0.3)
        assert parts.reconciler.status() is None, "the reconciliation started before the gate"
        gate.set()
        await _until(lambda: (parts.reconciler.status() or {}).get("state") == "done", 30)
        await lifespan.stop()

    asyncio.run(run())
