"""The CLI's way to a running server: one authenticated httpx client and error translation.

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
from .connection import when_down

#: The environment variable that holds a client's token.


@dataclass(frozen=True)
class ChosenToken:
    value: str
    #: Where it came from, for messages: ``--token``, ``$CCMEM_TOKEN`` or ``the admin token``.
    source: str
    #: It is the admin token: known by its value, so also when it came by --token or the variable.
    is_admin: bool


def choose_token(
    given: str | None,
    admin_token: str | None,
    *,
    admin_fallback: bool = True,
    environ: Mapping[str, str] | None = None,
) -> ChosenToken | None:
    """The token a command sends: ``given`` (``--token``), else ``$CCMEM_TOKEN``, else (with
    ``admin_fallback``) the admin token from ``.env`` / the environment; None when none is set.
    An empty value counts as not given."""
    environ = os.environ if environ is None else environ
    candidates = [(given, "--token"), (environ.get(TOKEN_ENV), f"${TOKEN_ENV}")]
    if admin_fallback:
        candidates.append((admin_token, "the admin token"))
    for value, source in candidates:
        if value:
            return ChosenToken(value, source, is_admin=bool(admin_token) and value == admin_token)
    return None


def _tls(base_url: str) -> ssl.SSLContext | bool:
    """What the client verifies TLS with: the default trust store for an https server. A plain
    http server needs none, and loading one is most of what the client costs to make; the context
    given instead verifies as strictly and trusts nothing, so no TLS connection succeeds with it."""
    return True if base_url.startswith("https://") else ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)


class Remote:
    def __init__(self, base_url: str, token: str, timeout: float = 30) -> None:
        self.base_url = base_url.rstrip("/")
        self.client = httpx.Client(
            base_url=self.base_url,
            headers={"Authorization": f"Bearer {token}"},
            timeout=timeout,
            verify=_tls(self.base_url),
        )

    @classmethod
    def from_settings(cls, settings: Settings, url: str | None = None, token: str | None = None) -> Remote:
        """``url`` defaults to the configured server address; the token is :func:`choose_token`'s."""
        host = settings.server.host if settings.server.host not in ("0.0.0.0", "::") else "127.0.0.1"
        base = url or f"http://{host}:{settings.server.port}"
        chosen = choose_token(token, settings.server.admin_token)
        if chosen is None:
            raise Unauthorised(f"no token: pass --token, set {TOKEN_ENV}, or set CCMEM_ADMIN_TOKEN in .env")
        return cls(base, chosen.value)

    def request(self, method: str, path: str, **kwargs: Any) -> Any:
        try:
            response = self.client.request(method, path, **kwargs)
        except httpx.HTTPError as exc:
            reason = f"cannot reach the server at {self.base_url} ({exc.__class__.__name__})"
            raise Unavailable(f"{reason}; {when_down(self.base_url)}") from exc
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
