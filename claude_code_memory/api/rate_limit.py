"""The request limits as an ASGI middleware: 429 with ``Retry-After`` past ``server.rate_limit``'s
rate per token or per client address (docs/remote.md). It runs before authentication, so a
flood of bad tokens is refused as cheaply as a flood of good ones."""

from __future__ import annotations

import json

import anyio.to_thread
from starlette.types import ASGIApp, Receive, Scope, Send

from ..auth.local_mode import is_loopback
from ..rate_limits.limiter import MemoryCounters, RequestLimits, seconds


class RateLimit:
    def __init__(self, app: ASGIApp, limits: RequestLimits, count_loopback: bool) -> None:
        self.app = app
        self.limits = limits
        self.count_loopback = count_loopback
        # Counters in the shared database (replicas) are a round trip: off the event loop.
        self.offload = not isinstance(limits.store, MemoryCounters)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        client = scope.get("client")
        address = client[0] if client else ""
        if not self.count_loopback and (not address or is_loopback(address)):
            await self.app(scope, receive, send)
            return
        token = None
        for name, value in scope.get("headers", []):
            if name == b"authorization":
                scheme, _, credential = value.decode("latin-1").partition(" ")
                token = credential.strip() if scheme.lower() == "bearer" else None
                break
        refusal = (
            await anyio.to_thread.run_sync(self.limits.hit, address, token)
            if self.offload
            else self.limits.hit(address, token)
        )
        if refusal is None:
            await self.app(scope, receive, send)
            return
        wait = seconds(refusal.retry_after)
        body = json.dumps(
            {
                "detail": f"too many requests from this {refusal.counted}: try again in {wait} s "
                "(server.rate_limit, docs/remote.md)",
                "error": "rate_limited",
            }
        ).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 429,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                    (b"retry-after", str(wait).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})
