"""The server while it starts: the port answers at once, the application is built behind it.

``ccmem serve`` binds its port with this ASGI application in front before the web framework,
the database, the vector store and the model are loaded (seconds, most of them imports), and
builds the real application in a thread meanwhile:

* ``GET /health`` answers at once: 503 with ``"status": "starting"`` until the application
  has started, then the application's own report. 200 keeps its meaning, ready to serve (what
  the supervisor, the hooks and the tests wait for), and a starting server is told apart from
  one that is not there, or not ours.
* Any other request waits for the application, then goes to it: a search that arrives early
  is answered as soon as what it needs is loaded, without the client polling.
* When the build fails, waiting requests get 503 and the server stops; :attr:`WarmStart.failure`
  hands the error to ``serve``, which reports it as it would have before binding.

Once built, the application's own lifespan runs (its start-up and, at shutdown, its clean-up).
An application built with part of itself left for later (``later``, set by ``build``: the REST
routers a first search does not need, api/route_table.py) answers the requests ``first`` names
at once, and the others once ``later`` has run in a thread: after the first answered request,
when a request needs it, or ``grace_seconds`` after the start, whichever comes first. From then
on every request goes straight to it. :attr:`WarmStart.answered` is set once the first request
past ``/health`` has been answered: what the server's background jobs wait for (``api/app.py``),
so that they do not take the CPU from the first search. This module imports the standard
library only: it is loaded before everything else.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import threading
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]

log = logging.getLogger(__name__)

HEALTH_PATH = "/health"


class WarmStart:
    """An ASGI application that answers while ``build()`` makes the real one in a thread.

    ``starting``: the body ``/health`` answers (503) until then. ``on_failure``: called (on the
    event loop) when the build or the application's start-up fails, to stop the server.
    """

    def __init__(
        self, build: Callable[[], App], starting: dict[str, Any], grace_seconds: float = 2.0
    ) -> None:
        self._build = build
        self.grace_seconds = grace_seconds
        #: What the application left for later, run in a thread, and the requests it answers
        #: before (``build`` sets both, or neither: nothing is left).
        self.later: Callable[[], None] | None = None
        self.first: Callable[[Scope], bool] = lambda scope: True
        self._starting = json.dumps({**starting, "status": "starting"}).encode()
        self.on_failure: Callable[[], None] = lambda: None
        self.app: App | None = None
        #: Why the application could not be built or started (None: it was, or is being).
        self.failure: BaseException | None = None
        self._ready: asyncio.Event | None = None
        self._built: asyncio.Event | None = None
        self._stopping: asyncio.Event | None = None
        self._complete: asyncio.Event | None = None
        self._wanted: asyncio.Event | None = None
        self.answered: asyncio.Event | None = None
        #: True once the application has started and has everything: requests go straight to it.
        self.serving = False
        self._first = True

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.serving:
            assert self.app is not None
            await self.app(scope, receive, send)
            if self._first and scope["type"] != "lifespan" and scope.get("path") != HEALTH_PATH:
                self._answered()
            return
        if scope["type"] == "lifespan":
            await self._lifespan(scope, receive, send)
            return
        assert self._ready is not None and self._complete is not None and self._wanted is not None
        health = scope["type"] == "http" and scope["path"] == HEALTH_PATH
        if health and not self._ready.is_set() and scope["method"] in ("GET", "HEAD"):
            await _json(send, 503, self._starting)
            return
        await self._ready.wait()
        later = not (health or self._complete.is_set() or self.first(scope))
        if self.failure is None and later:
            self._wanted.set()
            await self._complete.wait()
        if self.failure is not None or self.app is None:
            if scope["type"] == "http":
                await _json(send, 503, b'{"detail": "the server failed to start; see its log"}')
            return
        await self.app(scope, receive, send)
        if scope.get("path") != HEALTH_PATH:
            self._answered()

    def _answered(self) -> None:
        self._first = False
        if self.answered is not None:
            self.answered.set()

    async def first_answer(self, timeout: float) -> None:
        """Return once the first request past ``/health`` has been answered, or after
        ``timeout`` seconds (a server nobody asks yet)."""
        assert self.answered is not None
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.answered.wait(), timeout)

    # -- the lifespan: uvicorn's, and the application's behind it -------------------------------
    async def _lifespan(self, scope: Scope, receive: Receive, send: Send) -> None:
        await receive()  # lifespan.startup
        loop = asyncio.get_running_loop()
        self._ready, self._built, self._stopping = asyncio.Event(), asyncio.Event(), asyncio.Event()
        self._complete, self._wanted, self.answered = asyncio.Event(), asyncio.Event(), asyncio.Event()
        threading.Thread(target=self._build_in_thread, args=(loop,), name="warm-start", daemon=True).start()
        inner = asyncio.create_task(self._run_app_lifespan(scope))
        await send({"type": "lifespan.startup.complete"})
        await receive()  # lifespan.shutdown
        self._stopping.set()
        await inner
        await send({"type": "lifespan.shutdown.complete"})

    def _build_in_thread(self, loop: asyncio.AbstractEventLoop) -> None:
        try:
            self.app = self._build()
        except BaseException as exc:  # handed to serve, which reports it
            self.failure = exc
        assert self._built is not None
        loop.call_soon_threadsafe(self._built.set)

    async def _run_app_lifespan(self, outer: Scope) -> None:
        """The application's lifespan once it is built: start-up, then clean-up at shutdown."""
        assert self._built is not None and self._ready is not None and self._stopping is not None
        await self._built.wait()
        if self.failure is not None or self.app is None:
            self._fail()
            return
        started = asyncio.Event()
        stopping = self._stopping
        sent = iter(({"type": "lifespan.startup"},))

        async def receive() -> Message:
            message = next(sent, None)
            if message is not None:
                return message
            await stopping.wait()
            return {"type": "lifespan.shutdown"}

        async def send(message: Message) -> None:
            kind = message["type"]
            if kind == "lifespan.startup.complete":
                started.set()
            elif kind == "lifespan.startup.failed":
                self.failure = RuntimeError(message.get("message") or "the application's start-up failed")
                started.set()

        scope = {"type": "lifespan", "asgi": outer.get("asgi", {}), "state": outer.get("state", {})}
        task: asyncio.Future[Any] = asyncio.ensure_future(self.app(scope, receive, send))
        starting: asyncio.Future[Any] = asyncio.ensure_future(started.wait())
        await asyncio.wait({task, starting}, return_when=asyncio.FIRST_COMPLETED)
        if task.done() and not started.is_set():  # the lifespan raised before it started
            self.failure = task.exception() or RuntimeError("the application's lifespan ended")
        starting.cancel()
        if self.failure is not None:
            self._fail()
            with contextlib.suppress(Exception):  # what failed is in self.failure
                await task
            return
        self._ready.set()
        finishing = asyncio.ensure_future(self._finish())
        try:
            await task
        except Exception:  # its clean-up failed: logged, the server stops anyway
            log.exception("the application's shutdown failed")
        finally:
            finishing.cancel()

    async def _finish(self) -> None:
        """Run ``later`` once the first request is answered, one needs it, or the grace is over;
        then every request goes straight to the application."""
        assert self._complete is not None and self._wanted is not None and self.answered is not None
        if self.later is not None:
            waits = {asyncio.ensure_future(self.answered.wait()), asyncio.ensure_future(self._wanted.wait())}
            await asyncio.wait(waits, timeout=self.grace_seconds, return_when=asyncio.FIRST_COMPLETED)
            for waiting in waits:
                waiting.cancel()
            try:
                await asyncio.to_thread(self.later)
            except Exception as exc:  # a part of the application failed to load: stop
                self.failure = exc
                self._complete.set()
                self._fail()
                return
        self.serving = True
        self._complete.set()

    def _fail(self) -> None:
        assert self._ready is not None and self._complete is not None
        log.error("the server failed to start: %s", self.failure)
        self._ready.set()
        self._complete.set()
        self.on_failure()


async def _json(send: Send, status: int, body: bytes) -> None:
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
