"""The API app in the test process: ``create_app(settings)`` reached through httpx over ASGI.

A REST test that needs no process of its own (no signals, no restart, no port for a third-party
client) runs against this: the same app ``ccmem serve`` builds, with the real stores (SQLite,
embedded Qdrant, the ONNX embedder) under a data directory of its own, without the start of a
child process and the load of the model in it. Starlette's ``TestClient`` is httpx over the ASGI
app; entering it runs the app's lifespan (the reconciler, the sweepers, the MCP session manager),
and leaving it runs the shutdown, which closes the stores.

Its interface is the one REST tests use on :class:`~tests.support.server.MemoryServer`:
``admin_token``, ``admin_headers()``, ``make_token(user)``, ``client(token)``, ``data_dir``,
``log()``. Settings come from the repository's ``config.yaml`` and the ``env`` a test passes, never
from the developer's environment, as for the child process.
"""

from __future__ import annotations

import io
import logging
import secrets
from pathlib import Path
from typing import Any, Self

import httpx
from fastapi import FastAPI
from fastapi.testclient import TestClient

from claude_code_memory.api.app import create_app
from claude_code_memory.config import Settings, load_settings

from .server import REPO_ROOT

BASE_URL = "http://ccmem.test"  # only this app's clients reach it: there is no socket

_CLIENT_OPTIONS: dict[str, Any] = {
    "base_url": BASE_URL,
    # An error the app does not handle answers 500, as the real server's does.
    "raise_server_exceptions": False,
    # As httpx.Client, which the tests against the child process use.
    "follow_redirects": False,
    # Requests come from this machine, as they do to the child process.
    "client": ("127.0.0.1", 50000),
}


class _Client(TestClient):
    """A client of an app another :class:`TestClient` runs: ``with`` closes it and leaves the
    app's lifespan alone (a ``TestClient`` would run the start-up and shutdown again)."""

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def request(self, *args: Any, timeout: object = None, **kwargs: Any) -> httpx.Response:  # type: ignore[override]
        """As httpx's; a ``timeout`` a test passes for the network is dropped: there is none."""
        return super().request(*args, **kwargs)


class InProcessServer:
    """``start()`` builds the app and runs its start-up; ``stop()`` its shutdown (stores closed)."""

    base_url = BASE_URL

    def __init__(
        self, work_dir: Path, *, data_dir: Path | None = None, env: dict[str, str] | None = None
    ) -> None:
        self.work_dir = work_dir
        self.work_dir.mkdir(parents=True, exist_ok=True)
        self.data_dir = data_dir or work_dir / "data"
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.admin_token = secrets.token_urlsafe(32)
        self.extra_env = dict(env or {})
        self._app: FastAPI | None = None
        self._client: TestClient | None = None
        self._log = io.StringIO()
        self._log_handler = logging.StreamHandler(self._log)

    def settings(self) -> Settings:
        config = REPO_ROOT / "config.yaml"
        return load_settings(
            config_path=config if config.exists() else None,
            env_file=self.work_dir / ".env",  # there is none: the repository's .env stays out
            environ={"CCMEM_ADMIN_TOKEN": self.admin_token, **self.extra_env},
            overrides={"server.data_dir": str(self.data_dir)},
        )

    def start(self) -> InProcessServer:
        if self._client is not None:
            raise RuntimeError("the app is already running")
        logging.getLogger("claude_code_memory").addHandler(self._log_handler)
        self._app = create_app(self.settings())
        client = TestClient(self._app, **_CLIENT_OPTIONS)
        client.__enter__()  # the lifespan's start-up
        self._client = client
        return self

    def stop(self) -> None:
        """The lifespan's shutdown: background jobs end and the stores close."""
        client, self._client, self._app = self._client, None, None
        try:
            if client is not None:
                client.__exit__(None, None, None)
        finally:
            logging.getLogger("claude_code_memory").removeHandler(self._log_handler)

    def restart(self) -> InProcessServer:
        """Shut the app down and build it again over the same data directory."""
        self.stop()
        return self.start()

    @property
    def app(self) -> FastAPI:
        """The running app (its routes, its state), for tests that walk it."""
        if self._app is None:
            raise RuntimeError("the app is not running")
        return self._app

    def admin_headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.admin_token}"}

    def client(self, token: str | None = None, *, timeout: float = 60) -> httpx.Client:
        """An httpx client of this app, with ``token`` as its bearer token (none: no header)."""
        if self._client is None or self._app is None:
            raise RuntimeError("the app is not running")
        headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
        client = _Client(self._app, headers=headers, **_CLIENT_OPTIONS)
        client.portal = self._client.portal  # the running app's event loop, not a new one
        client.timeout = httpx.Timeout(timeout)
        return client

    def make_token(self, user: str) -> str:
        """A new bearer token for ``user``, from ``POST /api/v1/tokens`` with the admin token."""
        response = self.client(self.admin_token).post("/api/v1/tokens", json={"user_id": user})
        if response.status_code != 201:
            raise RuntimeError(f"POST /api/v1/tokens answered {response.status_code}: {response.text}")
        return str(response.json()["token"])

    def log(self) -> str:
        """What the package logged while the app ran, for assertion messages."""
        return self._log.getvalue()[-6000:] or "(no output)"

    def __enter__(self) -> InProcessServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
