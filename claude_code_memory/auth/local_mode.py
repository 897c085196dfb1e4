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
import re
from dataclasses import dataclass

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


#: A Host header naming this machine, and nothing else: ``localhost``, a 127.x.y.z address
#: written plainly (no leading zeros, which some resolvers read as octal) or ``[::1]``, then
#: an optional port. No userinfo (``evil@``), no trailing dot, no other spelling of an address.
_LOOPBACK_HOST = re.compile(
    r"(?P<name>localhost|127(?:\.(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])){3}|\[::1\])"
    r"(?::(?P<port>[0-9]{1,5}))?",
    re.IGNORECASE,
)
#: The port a client leaves out of Host: http's.
DEFAULT_PORT = 80


def loopback_host_port(value: str) -> int | None:
    """The port a ``Host`` header value names when it is exactly a loopback name or address
    (:data:`_LOOPBACK_HOST`; :data:`DEFAULT_PORT` when it names none), else None."""
    match = _LOOPBACK_HOST.fullmatch(value)
    if match is None:
        return None
    return int(match["port"]) if match["port"] else DEFAULT_PORT


@dataclass(frozen=True)
class LocalMode:
    user: str
    aliases: frozenset[str]
    port: int

    def principal(self, host: str | None, origin: str | None, fetch_site: str | None = None) -> Principal:
        """The local user's principal for a request without a token; Forbidden naming the
        header that shows it does not come from this machine."""
        if loopback_host_port(host or "") != self.port:
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
    scheme, separator, authority = origin.partition("://")
    if not separator or scheme.lower() not in ("http", "https"):
        return False
    return loopback_host_port(authority) is not None
