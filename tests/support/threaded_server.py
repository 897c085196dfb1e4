"""An ASGI app served by uvicorn in a thread of the test process, on a port the OS picks.

The fake upstreams (Anthropic, OpenAI, Qdrant) run this way: a real HTTP server on loopback that
the product talks to over the network, without a process of its own to start.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import uvicorn

START_TIMEOUT = 10.0


class ThreadedServer:
    """``start()`` serves ``app`` and returns once it listens; ``port`` is then the bound port."""

    def __init__(
        self, app: Any, *, name: str, host: str = "127.0.0.1", tls: tuple[Path, Path] | None = None
    ) -> None:
        self.app = app
        self.name = name
        self.host = host
        self.tls = tls
        self.port = 0
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> ThreadedServer:
        options: dict[str, Any] = {}
        if self.tls is not None:
            options = {"ssl_certfile": str(self.tls[0]), "ssl_keyfile": str(self.tls[1])}
        config = uvicorn.Config(
            self.app, host=self.host, port=0, log_level="warning", lifespan="off", **options
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, name=self.name, daemon=True)
        self._thread.start()
        deadline = time.monotonic() + START_TIMEOUT
        while not (self._server.started and self._server.servers):
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(f"{self.name} did not start")
            time.sleep(0.01)
        self.port = self._server.servers[0].sockets[0].getsockname()[1]
        return self

    def stop(self) -> None:
        """Ask uvicorn to exit and wait for its thread (a no-op when not running)."""
        if self._server is not None and self._thread is not None:
            self._server.should_exit = True
            self._thread.join(timeout=10)
        self._server = None
        self._thread = None
