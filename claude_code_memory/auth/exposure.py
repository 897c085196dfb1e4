"""Whether the server may listen where it is told to (docs/remote.md).

On a loopback address only this machine reaches the server. Anywhere else the network does,
so the server needs TLS (tokens cross the network) and a token on every request (the local
mode lets requests without one in, and it already refuses any address but loopback). The one
way past this check is ``server.insecure_bind`` (``--insecure-bind``), for a deployment whose
TLS ends in front of the server (a container behind a proxy), and it is logged loudly.
"""

from __future__ import annotations

from ..errors import ConfigError
from .local_mode import is_loopback

INSECURE_WARNING = (
    "INSECURE BIND: serving {host} without TLS (server.insecure_bind): tokens cross the network "
    "in the clear unless something in front of this server adds TLS"
)


def check_bind(host: str, *, tls: bool, insecure_bind: bool) -> str | None:
    """None when ``host`` is safe to serve as configured; the warning to log when
    ``insecure_bind`` lets an unsafe address through; ConfigError naming the fix otherwise."""
    if is_loopback(host) or tls:
        return None
    if insecure_bind:
        return INSECURE_WARNING.format(host=host)
    raise ConfigError(
        f"server.host = {host!r} is reachable from other machines, and TLS is off: tokens would "
        "cross the network in the clear. Turn TLS on (`ccmem serve --tls-self-signed`, or "
        "--tls-cert FILE --tls-key FILE; server.tls in config.yaml), bind 127.0.0.1, or, when "
        "TLS ends in front of this server, pass --insecure-bind (server.insecure_bind: true). "
        "See docs/remote.md"
    )
