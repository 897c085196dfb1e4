"""Shared fixtures: the real server as a child process, a throwaway PostgreSQL, free ports.

The machinery lives in ``tests/support/``; this file only turns it into fixtures.

* ``start_server(env=..., data_dir=...)`` starts ``ccmem serve`` on a free loopback port with a
  temporary data directory and a random admin token, waits for ``/health`` and returns a
  :class:`~tests.support.server.MemoryServer` (``base_url``, ``admin_token``, ``data_dir``,
  ``make_token(user)``, ``restart()``, ``stop()``, ``log()``). Every server it started is
  stopped by PID at the end of the test.
* ``server`` is one such server with the default settings.
* ``postgres`` / ``postgres_url``: a fresh PostgreSQL cluster on 127.0.0.1 (Debian's
  ``postgresql`` package); fails instead of skipping in CI when PostgreSQL is missing.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.support.postgres import PostgresCluster
from tests.support.processes import free_port as _free_port
from tests.support.server import MemoryServer

StartServer = Callable[..., MemoryServer]


@pytest.fixture
def free_port() -> Callable[[], int]:
    """A function returning a TCP port on 127.0.0.1 that nothing listens on."""
    return _free_port


@pytest.fixture
def start_server(tmp_path: Path) -> Iterator[StartServer]:
    servers: list[MemoryServer] = []
    numbers = itertools.count(1)

    def start(*, env: dict[str, str] | None = None, data_dir: Path | None = None) -> MemoryServer:
        server = MemoryServer(tmp_path / f"server-{next(numbers)}", data_dir=data_dir, env=env)
        servers.append(server)
        return server.start()

    yield start
    for server in servers:
        server.stop()


@pytest.fixture
def server(start_server: StartServer) -> MemoryServer:
    return start_server()


@pytest.fixture
def postgres() -> Iterator[PostgresCluster]:
    with PostgresCluster() as cluster:
        yield cluster


@pytest.fixture
def postgres_url(postgres: PostgresCluster) -> str:
    """``postgresql://user:password@127.0.0.1:PORT/db`` of a fresh, empty database."""
    return postgres.url
