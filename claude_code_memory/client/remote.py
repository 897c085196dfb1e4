"""The CLI's way to a running server: where it is and which token goes there (one place:
:func:`credentials`), one authenticated httpx client, and error translation.

Commands that touch memories (consent, purge, forget) go through the server's REST API
because the embedded vector store belongs to the server process (it locks its directory).
"""

from __future__ import annotations

import os
import ssl
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import httpx

from ..config import TOKEN_ENV, Settings
from ..errors import (
    Unauthorised,
    Unavailable,
    error_for_status,
)
from . import connection as saved_connection
from .connection import START_HINT, Connection, when_down


@dataclass(frozen=True)
class ChosenToken:
    value: str
    #: Where it came from, for messages: ``--token``, ``$CCMEM_TOKEN``, the connection file's
    #: path or ``the admin token``.
    source: str
    #: It is the admin token: known by its value, so also when it came by --token or the variable.
    is_admin: bool


def choose_token(
    given: str | None,
    admin_token: str | None,
    *,
    admin_fallback: bool = True,
    environ: Mapping[str, str] | None = None,
    connection: Connection | None = None,
) -> ChosenToken | None:
    """The token a command sends: ``given`` (``--token``), else ``$CCMEM_TOKEN``, else the saved
    ``connection``'s (``ccmem connect``), else (with ``admin_fallback``) the admin token from
    ``.env`` / the environment; None when none is set. An empty value counts as not given."""
    environ = os.environ if environ is None else environ
    candidates = [(given, "--token"), (environ.get(TOKEN_ENV), f"${TOKEN_ENV}")]
    if connection is not None:
        candidates.append((connection.token(), str(saved_connection.path(environ))))
    if admin_fallback:
        candidates.append((admin_token, "the admin token"))
    for value, source in candidates:
        if value:
            return ChosenToken(value, source, is_admin=bool(admin_token) and value == admin_token)
    return None


@dataclass(frozen=True)
class Credentials:
    """Where a command goes and as whom: the one place the CLI decides it."""

    url: str
    token: ChosenToken | None
    #: The saved connection when it serves ``url`` (its token is then a candidate).
    connection: Connection | None
    #: What to say when nothing answers at ``url``.
    unreachable_hint: str


def configured_url(settings: Settings) -> str:
    """The configured address (a wildcard bind address is reached on loopback)."""
    host = settings.server.host if settings.server.host not in ("0.0.0.0", "::") else "127.0.0.1"
    return f"http://{host}:{settings.server.port}"


def credentials(
    settings: Settings,
    url: str | None = None,
    token: str | None = None,
    *,
    explicit_config: bool = False,
    environ: Mapping[str, str] | None = None,
) -> Credentials:
    """The server and token of a command: ``url`` (``--url``), else the connected server (unless
    the config was named), else the configured address; the token by :func:`choose_token`, the
    saved connection's counting only for its own server, the admin token never for a remote
    server reached through the connection."""
    environ = os.environ if environ is None else environ
    saved = saved_connection.load(environ)
    if url:
        base = url.rstrip("/")
    elif saved is not None and not explicit_config:
        base = saved.url.rstrip("/")
    else:
        base = configured_url(settings)
    serving = saved if saved is not None and saved.url.rstrip("/") == base else None
    remote = serving is not None and serving.config is None
    chosen = choose_token(
        token,
        settings.server.admin_token,
        admin_fallback=not (remote and not url),
        environ=environ,
        connection=serving,
    )
    return Credentials(base, chosen, serving, when_down(base, environ))


def _tls(base_url: str, ca_file: str | None = None) -> ssl.SSLContext | bool:
    """What the client verifies TLS with: ``ca_file`` (a pinned certificate) or the default trust
    store for an https server. A plain http server needs none, and loading one is most of what
    the client costs to make; the context given instead verifies as strictly and trusts nothing,
    so no TLS connection succeeds with it."""
    if not base_url.startswith("https://"):
        return ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    return ssl.create_default_context(cafile=ca_file) if ca_file else True


class Remote:
    def __init__(
        self,
        base_url: str,
        token: str,
        timeout: float = 30,
        unreachable_hint: str = f"start it with `{START_HINT}`",
        ca_file: str | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.unreachable_hint = unreachable_hint
        #: The user every request acts for (an admin's ``--user``): named in each query and JSON body.
        self.acting_for: str | None = None
        self.client = httpx.Client(
            base_url=self.base_url,
            headers={"Authorization": f"Bearer {token}"},
            timeout=timeout,
            verify=_tls(self.base_url, ca_file),
        )

    @classmethod
    def from_settings(
        cls,
        settings: Settings,
        url: str | None = None,
        token: str | None = None,
        *,
        explicit_config: bool = False,
    ) -> Remote:
        """A client for :func:`credentials`' server and token."""
        return cls.for_credentials(credentials(settings, url, token, explicit_config=explicit_config))

    @classmethod
    def for_credentials(cls, chosen: Credentials) -> Remote:
        if chosen.token is None:
            raise Unauthorised(
                f"no token: run `ccmem connect claude-code`, pass --token, set {TOKEN_ENV}, "
                "or set CCMEM_ADMIN_TOKEN in .env"
            )
        ca_file = chosen.connection.ca_file if chosen.connection is not None else None
        return cls(chosen.url, chosen.token.value, unreachable_hint=chosen.unreachable_hint, ca_file=ca_file)

    def request(self, method: str, path: str, **kwargs: Any) -> Any:
        if self.acting_for is not None:
            kwargs["params"] = {"user_id": self.acting_for, **(kwargs.get("params") or {})}
            if isinstance(kwargs.get("json"), dict):
                kwargs["json"] = {"user_id": self.acting_for, **kwargs["json"]}
        try:
            response = self.client.request(method, path, **kwargs)
        except httpx.HTTPError as exc:
            reason = f"cannot reach the server at {self.base_url} ({exc.__class__.__name__})"
            raise Unavailable(f"{reason}; {self.unreachable_hint}") from exc
        if response.status_code >= 400:
            try:
                detail = response.json().get("detail", response.text)
            except ValueError:
                detail = response.text
            raise error_for_status(response.status_code, detail)
        return response.json() if response.content else None

    def get(self, path: str, **kwargs: Any) -> Any:
        return self.request("GET", path, **kwargs)

    def post(self, path: str, **kwargs: Any) -> Any:
        return self.request("POST", path, **kwargs)

    def delete(self, path: str, **kwargs: Any) -> Any:
        return self.request("DELETE", path, **kwargs)

    def close(self) -> None:
        self.client.close()
