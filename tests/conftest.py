"""Shared fixtures: the real server as a child process, a throwaway PostgreSQL, free ports.

The machinery lives in ``tests/support/``; this file only turns it into fixtures.

* ``start_server(env=..., data_dir=...)`` starts ``ccmem serve`` on a free loopback port with a
  temporary data directory and a random admin token, waits for ``/health`` and returns a
  :class:`~tests.support.server.MemoryServer` (``base_url``, ``admin_token``, ``data_dir``,
  ``make_token(user)``, ``restart()``, ``stop()``, ``log()``). Every server it started is
  stopped by PID at the end of the test.
* ``start_module_server(...)`` is the same for a server the tests of one file share, stopped
  when they end; ``in_process=True`` gives the app in the test process instead
  (:class:`~tests.support.in_process.InProcessServer`: the same interface, reached through
  ``client(token)``) for REST tests that need no process of their own.
* ``server`` is one such server with the default settings.
* ``service`` (module-scoped): the in-process :class:`MemoryService` of ``ServerParts(settings)``
  over a data directory of its own, closed after the module; a file overrides
  ``service_overrides`` (dotted settings) to change its settings.
* ``built`` (session-scoped): the wheel and the sdist, built once a test process
  (:func:`tests.support.package.build`; :func:`~tests.support.package.install` puts the wheel in
  a fresh virtualenv with a HOME of its own).
* ``postgres`` / ``postgres_url``: a fresh database of its own on a PostgreSQL cluster on
  127.0.0.1 (Debian's ``postgresql`` package; one cluster per test process, started when first
  needed); fails instead of skipping in CI when PostgreSQL is missing.

Every test gets exactly one speed tier, ``unit``, ``integration`` or ``e2e``, from the fixtures it
uses (see :func:`tier_of`), so ``pytest -m unit`` is the quick loop. A unit test that starts a
process or listens on a socket anyway fails, naming the tier it belongs to.
"""

from __future__ import annotations

import socket
import subprocess
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
import uvicorn

from tests.support import parallel, temp_root
from tests.support.package import Built, build
from tests.support.postgres import PostgresCluster, PostgresDatabase
from tests.support.processes import free_port as _free_port
from tests.support.server import MemoryServer
from tests.support.servers import Servers, StartServer

if TYPE_CHECKING:
    from claude_code_memory.memories.service import MemoryService


TIERS = ("unit", "integration", "e2e")

# Fixtures that start a real process, server or database: ``ccmem serve``, the web UI, the
# fake Qdrant on loopback, PostgreSQL, the native stack. Besides these names, any fixture named
# ``server`` or ``*_server`` (a test file's own ``memory_server``, ``backup_server``) counts.
INTEGRATION_FIXTURES = frozenset(
    {
        "start_server",
        "srv",
        "api",
        "ui",
        "gated",
        "qdrant",
        "postgres",
        "postgres_url",
        "checkout",
        # `python -m build`: the wheel and the sdist, for the package route.
        "built",
        # In process, but the real embedded store: the ONNX embedder, Qdrant Edge, SQLite.
        "embedder",
        "engine",
        "store",
        "service",
        "components",
    }
)
# Fixtures that drive a real third-party client: Chromium, mitmproxy's mitmdump.
E2E_FIXTURES = frozenset({"browser", "page", "_mitmdump"})
# Markers that put a test in a tier whatever its fixtures (a test that starts something itself).
INTEGRATION_MARKERS = frozenset({"integration", "postgres"})


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist's own, which reads these options
def pytest_cmdline_main(config: pytest.Config) -> None:
    parallel.default_to_workers(config)


def pytest_configure(config: pytest.Config) -> None:
    # Before pytest makes its base temporary directory (and before xdist starts its workers).
    temp_root.choose(config.option.basetemp)


def tier_of(fixture_names: Iterable[str], marker_names: Iterable[str]) -> str:
    """The slowest tier any of a test's fixtures or explicit markers puts it in."""
    fixtures, markers = set(fixture_names), set(marker_names)
    if "e2e" in markers or fixtures & E2E_FIXTURES:
        return "e2e"
    if (
        markers & INTEGRATION_MARKERS
        or fixtures & INTEGRATION_FIXTURES
        or any(map(_names_a_server, fixtures))
    ):
        return "integration"
    return "unit"


def _names_a_server(fixture: str) -> bool:
    return fixture == "server" or fixture.endswith("_server")


def tier_of_item(item: pytest.Item) -> str:
    return tier_of(getattr(item, "fixturenames", ()), (mark.name for mark in item.iter_markers()))


@pytest.hookimpl(tryfirst=True)  # before ``-m`` deselects by marker
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        item.add_marker(tier_of_item(item))
    parallel.longest_first(items)


def _refuse(what: str) -> Callable[..., None]:
    def refuse(*args: object, **kwargs: object) -> None:
        raise RuntimeError(
            f"a unit test {what}: give it a server fixture or mark it "
            "@pytest.mark.integration (or e2e) in tests/"
        )

    return refuse


@pytest.fixture(autouse=True)
def _unit_tests_start_nothing(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Keep the classification honest: a ``unit`` test that starts a process or a server fails."""
    if request.node.get_closest_marker("unit") is None:
        return
    monkeypatch.setattr(subprocess.Popen, "_execute_child", _refuse("started a process"))
    monkeypatch.setattr(socket.socket, "listen", _refuse("listened on a socket"))
    # uvicorn (the fake upstreams in a thread) listens through uvloop, out of the socket module's sight.
    monkeypatch.setattr(uvicorn.Server, "__init__", _refuse("started a uvicorn server"))


@pytest.fixture
def free_port() -> Callable[[], int]:
    """A function returning a TCP port on 127.0.0.1 that nothing listens on."""
    return _free_port


@pytest.fixture
def start_server(tmp_path: Path) -> Iterator[StartServer]:
    servers = Servers(tmp_path)
    yield servers.start
    servers.stop_all()


@pytest.fixture(scope="module")
def start_module_server(
    tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> Iterator[StartServer]:
    """``start_server`` for the servers a module's tests share: stopped after its last test."""
    servers = Servers(tmp_path_factory.mktemp(request.module.__name__.rpartition(".")[2]))
    yield servers.start
    servers.stop_all()


@pytest.fixture
def server(start_server: StartServer) -> MemoryServer:
    return start_server()


@pytest.fixture(scope="session")
def shared_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MemoryServer]:
    """One ``ccmem serve`` with the default settings that the test files of a process share: for
    tests that need the process (the CLI, an MCP client over HTTP) and change nothing but their
    own users' data. Each works with users of its own."""
    servers = Servers(tmp_path_factory.mktemp("shared"))
    yield servers.start()
    servers.stop_all()


@pytest.fixture(scope="session")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    """The wheel and the sdist of this checkout, built once a test process."""
    return build(tmp_path_factory.mktemp("dist"))


@pytest.fixture(scope="module")
def service_overrides() -> dict[str, object]:
    """Dotted settings for ``service``; a test file overrides this fixture to set its own."""
    return {}


@pytest.fixture(scope="module")
def service(
    tmp_path_factory: pytest.TempPathFactory, service_overrides: dict[str, object]
) -> Iterator[MemoryService]:
    from tests.support.parts import open_service  # the package's stores: only where a test needs them

    with open_service(tmp_path_factory.mktemp("service") / "data", service_overrides) as opened:
        yield opened


@pytest.fixture(scope="session")
def _postgres_cluster() -> Iterator[PostgresCluster]:
    """One cluster for the test process (each xdist worker has its own), started when a test
    first needs it."""
    with PostgresCluster() as cluster:
        yield cluster


@pytest.fixture
def postgres(_postgres_cluster: PostgresCluster) -> Iterator[PostgresDatabase]:
    """A fresh, empty database and its own role, dropped afterwards."""
    database = _postgres_cluster.new_database()
    yield database
    database.drop()


@pytest.fixture
def postgres_url(postgres: PostgresDatabase) -> str:
    """``postgresql://user:password@127.0.0.1:PORT/db`` of a fresh, empty database."""
    return postgres.url
