"""Counters that say "too many": the API's request limits per token and per address, and the
sign-in throttle of the web UI and the OAuth consent page (docs/remote.md); and the address a
request is counted under (:class:`ForwardedFor`: a proxy's ``X-Forwarded-For`` only from the
proxies ``server.trusted_proxies`` names).

The counting is the ``limits`` library's sliding-window counter. Where the counts live is a
:class:`CounterStore`: :class:`MemoryCounters` keeps them in this process, which is right for
one server; several replicas behind one load balancer need one shared store (a PostgreSQL one
can implement the same three methods).
"""

from __future__ import annotations

import hashlib
import ipaddress
import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from limits import RateLimitItem, parse
from limits.storage import MemoryStorage
from limits.strategies import SlidingWindowCounterRateLimiter


class CounterStore(Protocol):
    """Named counters over a rate such as ``1200/minute``."""

    def hit(self, rate: RateLimitItem, key: str) -> float | None:
        """Count one event for ``key``: None when it is within ``rate``, else the seconds until
        one more would be (nothing is counted then)."""

    def wait(self, rate: RateLimitItem, key: str) -> float | None:
        """Like :meth:`hit` without counting: would one more event be refused, and how long for."""

    def clear(self, rate: RateLimitItem, key: str) -> None:
        """Forget ``key``'s events."""


class MemoryCounters:
    """A :class:`CounterStore` in this process's memory (lost at restart)."""

    def __init__(self) -> None:
        self._limiter = SlidingWindowCounterRateLimiter(MemoryStorage())

    def hit(self, rate: RateLimitItem, key: str) -> float | None:
        if self._limiter.hit(rate, key):
            return None
        return self._retry_after(rate, key)

    def wait(self, rate: RateLimitItem, key: str) -> float | None:
        return None if self._limiter.test(rate, key) else self._retry_after(rate, key)

    def clear(self, rate: RateLimitItem, key: str) -> None:
        self._limiter.clear(rate, key)

    def _retry_after(self, rate: RateLimitItem, key: str) -> float:
        import time

        reset = self._limiter.get_window_stats(rate, key).reset_time
        return max(1.0, reset - time.time())


def rate(text: str) -> RateLimitItem:
    """``1200/minute``, ``5/15 minutes`` as the library's rate (ValueError when it is not one)."""
    return parse(text)


def seconds(retry_after: float) -> int:
    """A Retry-After header's whole seconds, never 0."""
    return max(1, math.ceil(retry_after))


def token_key(token: str) -> str:
    """A counter's name for a bearer token: a digest, so no token sits in memory as a key."""
    return "token:" + hashlib.sha256(token.encode("utf-8")).hexdigest()[:32]


@dataclass(frozen=True)
class Refusal:
    """Too many: what was counted (``token`` or ``address``) and the seconds to wait."""

    counted: str
    retry_after: float


class RequestLimits:
    """The API's limits: each request counts once for its address and once for its token."""

    def __init__(self, store: CounterStore, per_token: str, per_address: str) -> None:
        self.store = store
        self.per_token = rate(per_token)
        self.per_address = rate(per_address)

    def hit(self, address: str, token: str | None) -> Refusal | None:
        wait = self.store.hit(self.per_address, "address:" + address)
        if wait is not None:
            return Refusal("address", wait)
        if token:
            wait = self.store.hit(self.per_token, token_key(token))
            if wait is not None:
                return Refusal("token", wait)
        return None


class LoginThrottle:
    """Failed sign-ins per address: past ``failures`` within the rate's window, the address waits
    until the window lets one more in. Sign-in is by token, so there is no account name to count
    beside the address before the sign-in succeeds."""

    def __init__(self, store: CounterStore, failures: str) -> None:
        self.store = store
        self.failures = rate(failures)

    def wait(self, address: str) -> float | None:
        """Seconds this address must wait before it may try again; None: it may try now."""
        return self.store.wait(self.failures, "signin:" + address)

    def failed(self, address: str) -> None:
        self.store.hit(self.failures, "signin:" + address)


IpNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network


def proxy_networks(entries: Iterable[str]) -> tuple[IpNetwork, ...]:
    """``server.trusted_proxies``' addresses and networks (``10.0.0.5``, ``172.18.0.0/16``);
    ValueError naming an entry that is neither."""
    found = []
    for entry in entries:
        try:
            found.append(ipaddress.ip_network(entry.strip(), strict=False))
        except ValueError:
            raise ValueError(f"{entry!r} is not an IP address or network") from None
    return tuple(found)


def _trusted(address: str, proxies: tuple[IpNetwork, ...]) -> bool:
    try:
        ip = ipaddress.ip_address(address.strip().strip("[]"))
    except ValueError:
        return False
    return any(ip in network for network in proxies)


def forwarded_client(peer: str, forwarded_for: Iterable[str], proxies: tuple[IpNetwork, ...]) -> str:
    """The address a request counts for (pure): its peer's, unless the peer is a trusted proxy;
    then the nearest address in ``X-Forwarded-For`` (read right to left: each proxy appends the
    address it was reached from) that is not itself a trusted proxy. What a client writes into
    the header itself sits left of that and is never read."""
    if not proxies or not _trusted(peer, proxies):
        return peer
    hops = [hop.strip() for value in forwarded_for for hop in value.split(",") if hop.strip()]
    for hop in reversed(hops):
        if not _trusted(hop, proxies):
            return _without_port(hop)
    return _without_port(hops[0]) if hops else peer


def _without_port(hop: str) -> str:
    if hop.startswith("[") and "]" in hop:
        return hop[1 : hop.index("]")]
    if hop.count(":") == 1:
        return hop.split(":", 1)[0]
    return hop


class ForwardedFor:
    """ASGI middleware: the request's client address (and scheme) as :func:`forwarded_client`
    finds it; with no trusted proxy, ``X-Forwarded-*`` headers are ignored whoever sends them.
    Outermost, so the rate limits, the sign-in throttles and the logs all see one address."""

    def __init__(self, app: Any, proxies: Iterable[str] = ()) -> None:
        self.app = app
        self.proxies = proxy_networks(proxies)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        client = scope.get("client") if scope["type"] in ("http", "websocket") else None
        if client and self.proxies and _trusted(client[0], self.proxies):
            headers = scope.get("headers", [])
            hops = [v.decode("latin-1") for n, v in headers if n == b"x-forwarded-for"]
            address = forwarded_client(client[0], hops, self.proxies)
            scope = dict(scope, client=(address, 0) if address != client[0] else client)
            proto = next(
                (v.decode("latin-1").strip().lower() for n, v in headers if n == b"x-forwarded-proto"), ""
            )
            if scope["type"] == "http" and proto in ("http", "https"):
                scope["scheme"] = proto
        await self.app(scope, receive, send)
