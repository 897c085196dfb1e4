"""Starting memory servers for tests, and stopping every one of them afterwards.

One factory behind ``start_server`` (a test's own servers) and ``start_module_server`` (a server
the tests of one file share) in ``tests/conftest.py``: either ``ccmem serve`` as a child process
(:class:`~tests.support.server.MemoryServer`) or, with ``in_process=True``, the same app in the
test process (:class:`~tests.support.in_process.InProcessServer`). A test that needs start-up,
signals, a restart, the CLI against the data directory or a port for a third-party client (MCP
over HTTP, the web UI, Claude Code) takes the child process.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Protocol, overload

import httpx

from .server import MemoryServer

if TYPE_CHECKING:
    from .in_process import InProcessServer


class ApiServer(Protocol):
    """What a REST test reaches a server through, in process or as a child process."""

    @property
    def base_url(self) -> str: ...

    admin_token: str
    data_dir: Path

    def admin_headers(self) -> dict[str, str]: ...
    def client(self, token: str | None = None, *, timeout: float = 60) -> httpx.Client: ...
    def make_token(self, user: str) -> str: ...
    def log(self) -> str: ...


class StartServer(Protocol):
    """``start_server`` and ``start_module_server``: :meth:`Servers.start`."""

    @overload
    def __call__(
        self,
        *,
        env: dict[str, str] | None = ...,
        data_dir: Path | None = ...,
        in_process: Literal[False] = ...,
    ) -> MemoryServer: ...

    @overload
    def __call__(
        self, *, env: dict[str, str] | None = ..., data_dir: Path | None = ..., in_process: Literal[True]
    ) -> InProcessServer: ...


class Servers:
    """Servers started under ``root``, each in a directory of its own; :meth:`stop_all` stops
    them (child processes by PID), newest first."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._started: list[MemoryServer | InProcessServer] = []
        self._numbers = itertools.count(1)

    @overload
    def start(
        self,
        *,
        env: dict[str, str] | None = ...,
        data_dir: Path | None = ...,
        in_process: Literal[False] = ...,
    ) -> MemoryServer: ...

    @overload
    def start(
        self, *, env: dict[str, str] | None = ..., data_dir: Path | None = ..., in_process: Literal[True]
    ) -> InProcessServer: ...

    def start(
        self, *, env: dict[str, str] | None = None, data_dir: Path | None = None, in_process: bool = False
    ) -> MemoryServer | InProcessServer:
        work_dir = self.root / f"server-{next(self._numbers)}"
        server: MemoryServer | InProcessServer
        if in_process:
            from .in_process import InProcessServer  # the whole app: imported only when used

            server = InProcessServer(work_dir, data_dir=data_dir, env=env)
        else:
            server = MemoryServer(work_dir, data_dir=data_dir, env=env)
        self._started.append(server)
        return server.start()

    def stop_all(self) -> None:
        while self._started:
            self._started.pop().stop()
