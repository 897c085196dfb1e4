"""The local mode: requests without a token act as one user, and only from this machine.

For clients that cannot send a token: the stock OpenMemory UI and the MCP configs that
``npx @openmemory/install`` wrote. Off by default (``auth.local_mode``). While on:

* the server refuses to start unless it is bound to a loopback address (:func:`require_loopback`);
* a request without ``Authorization`` is let in only when its ``Host`` names this machine with
  the server's port (a DNS-rebinding page sends its own name), its ``Origin`` is absent or a
  loopback origin, and, without an ``Origin``, the browser does not call it
  ``Sec-Fetch-Site: cross-site`` (another site's page loading a URL of this server): anything
  else is 403 with the reason;
* such a request acts for ``user``, and ``user_id`` values in ``aliases`` (OpenMemory's
  default names) mean that user;
* a request with a token is authenticated as always.

Pure checks over header values; the API's ``authenticate`` dependency calls them.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from urllib.parse import urlsplit

from ..errors import ConfigError, Forbidden
from .identity import Principal

LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})
#: Sec-Fetch-Site values a page on this machine (or no page: curl, an MCP client) sends.
_SAME_MACHINE_FETCH = frozenset({"same-origin", "same-site", "none"})


def is_loopback(host: str) -> bool:
    """Whether a bind address or a host name is this machine's loopback."""
    host = host.strip().strip("[]").lower()
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def require_loopback(host: str) -> None:
    """Raise ConfigError unless the server binds ``host``, a loopback address."""
    if not is_loopback(host):
        raise ConfigError(
            f"auth.local_mode.enabled is true but server.host = {host!r} is not a loopback address: "
            "the local mode lets requests without a token in, so it only runs on 127.0.0.1, ::1 or "
            "localhost. Bind to 127.0.0.1, or turn the local mode off and use tokens"
        )


def _host_and_port(value: str) -> tuple[str, int | None]:
    """``Host`` header value → (host name, port); the port None when absent."""
    parts = urlsplit(f"//{value}")
    try:
        port = parts.port
    except ValueError:
        return "", None
    return (parts.hostname or ""), port


@dataclass(frozen=True)
class LocalMode:
    user: str
    aliases: frozenset[str]
    port: int

    def principal(self, host: str | None, origin: str | None, fetch_site: str | None = None) -> Principal:
        """The local user's principal for a request without a token; Forbidden naming the
        header that shows it does not come from this machine."""
        name, port = _host_and_port(host or "")
        if name not in LOOPBACK_NAMES or port != self.port:
            raise Forbidden(
                f"the local mode answers requests without a token only for Host localhost:{self.port}, "
                f"127.0.0.1:{self.port} or [::1]:{self.port}, not {host!r} (a DNS-rebinding guard); "
                "send a token"
            )
        if origin is not None and not _loopback_origin(origin):
            raise Forbidden(
                f"the local mode refuses requests without a token from the web page at {origin!r}: "
                "only pages on this machine (a loopback origin) may use it; send a token"
            )
        # Without an Origin (a no-cors GET another site's page makes), the browser's own word;
        # with a loopback Origin, 127.0.0.1 and localhost are "cross-site" to it but both local.
        if origin is None and fetch_site is not None and fetch_site.lower() not in _SAME_MACHINE_FETCH:
            raise Forbidden(
                f"the local mode refuses a {fetch_site} request without a token (Sec-Fetch-Site): "
                "only pages on this machine may use it; send a token"
            )
        return Principal(user_id=self.user, aliases=self.aliases, local=True)


def _loopback_origin(origin: str) -> bool:
    parts = urlsplit(origin)
    try:
        parts.port  # noqa: B018 - a malformed port raises here
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and (parts.hostname or "") in LOOPBACK_NAMES
