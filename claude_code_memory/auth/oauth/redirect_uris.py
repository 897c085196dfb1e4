"""Which redirect URIs a client may name (pure): registration, Client ID Metadata Documents
and the consent page's redirect back all ask :func:`check`.

Allowed (RFC 8252, OAuth 2.1 §2.3.1):

* ``https`` URLs with a host, no credentials and no fragment;
* ``http`` only on a loopback host (``127.0.0.1``, ``[::1]``, ``localhost``): a native app's
  listener, whose port may change from run to run (RFC 8252 §7.3);
* a private-use scheme of a native app (RFC 8252 §7.1): ``com.example.app:/callback``, or a
  single word as some MCP clients register (``cursor://...``), unless the scheme is one a
  browser or the operating system acts on itself: ``javascript:``, ``data:``, ``vbscript:``,
  ``file:``, ``blob:`` and the others of :data:`REFUSED_SCHEMES` never reach a browser's
  address bar from here.

The consent page's Deny sends the browser to the URI the request names: only a URI that
passes here.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")
#: Longest redirect URI accepted (registration and documents alike).
MAX_LENGTH = 2000
#: Schemes a browser or the system handles itself: a redirect there runs code, reads a local
#: file or opens something other than the client.
REFUSED_SCHEMES = frozenset(
    {
        "javascript",
        "data",
        "vbscript",
        "file",
        "blob",
        "filesystem",
        "about",
        "view-source",
        "ftp",
        "ws",
        "wss",
        "jar",
        "mailto",
        "tel",
        "sms",
        "intent",
        "chrome",
        "chrome-extension",
        "moz-extension",
        "ms-browser-extension",
        "resource",
        "content",
        "mhtml",
        "ms-settings",
        "shell",
        "res",
    }
)
_SCHEME = re.compile(r"^[a-z][a-z0-9+.-]*$")


class RedirectUriRefused(ValueError):
    """A redirect URI no client may use; the message says why."""


def check(uri: str) -> None:
    """Raise :class:`RedirectUriRefused` unless ``uri`` is a redirect URI a client may name."""
    if len(uri) > MAX_LENGTH:
        raise RedirectUriRefused(f"a redirect URI is {len(uri)} characters long; at most {MAX_LENGTH}")
    if any(ord(c) < 0x21 or ord(c) == 0x7F for c in uri):
        raise RedirectUriRefused(f"{uri[:80]!r}: a redirect URI holds no spaces or control characters")
    scheme, _, rest = uri.partition(":")
    scheme = scheme.lower()
    if not _SCHEME.match(scheme) or not rest:
        raise RedirectUriRefused(f"{uri[:80]!r} is not an absolute URI")
    parts = urlsplit(uri)
    if parts.fragment or "#" in uri:
        raise RedirectUriRefused(f"{uri[:80]}: a redirect URI has no fragment (RFC 6749 §3.1.2)")
    if scheme == "https":
        if not parts.hostname or parts.username is not None or parts.password is not None:
            raise RedirectUriRefused(f"{uri[:80]}: an https redirect URI needs a host and no credentials")
        return
    if scheme == "http":
        if parts.hostname in LOOPBACK_HOSTS and parts.username is None and parts.password is None:
            return
        raise RedirectUriRefused(f"{uri[:80]}: redirect URIs must be https, or http on a loopback address")
    if scheme in REFUSED_SCHEMES:
        raise RedirectUriRefused(
            f"{uri[:80]}: the {scheme}: scheme is not a redirect URI (https, http on loopback, or a "
            "native app's own scheme)"
        )


def allowed(uri: str) -> bool:
    try:
        check(uri)
    except RedirectUriRefused:
        return False
    return True
