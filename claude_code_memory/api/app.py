"""The API server's composition root: the only place that reads settings and wires parts."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI
from fastapi.middleware.cors import CORSMiddleware
from fastapi.responses import JSONResponse

from .. import SERVICE_NAME, __version__
from ..auth.devices import Devices
from ..auth.exposure import check_bind
from ..auth.local_mode import LocalMode, require_loopback
from ..config import Settings
from ..mcp import create_mcp_endpoint
from ..memories.server_parts import ServerParts
from ..rate_limits.limiter import CounterStore, ForwardedFor, LoginThrottle, MemoryCounters, RequestLimits
from ..store.shared_state import SharedCounters
from . import errors
from .deps import authenticate
from .json_guard import JsonDepthLimit
from .middleware import BodyLimit, RejectLoneSurrogates, StripTrailingSlash
from .rate_limit import RateLimit
from .route_table import Routers
from .routes import hooks, memories

log = logging.getLogger(__name__)

#: Backup imports upload a zip; they get this many times the ordinary body cap.
IMPORT_BODY_FACTOR = 50


#: Pages on this machine, whatever their port: the stock OpenMemory UI calls from :3000.
LOOPBACK_ORIGIN = r"https?://(localhost|127\.0\.0\.1|\[::1\])(:[0-9]+)?"


def create_app(
    settings: Settings,
    components: ServerParts | None = None,
    counters: CounterStore | None = None,
    jobs_after: Callable[[], Awaitable[None]] | None = None,
    routes_later: bool = False,
) -> FastAPI:
    """``counters``: where rate limits count (default: this process's memory; with replicas,
    the shared database, so that every replica counts a client's requests together).
    ``jobs_after``: what the background jobs (the start-up reconciliation first) wait for
    before they start (default: nothing); ``ccmem serve`` passes the first answered request,
    so that they do not share the CPU with it (api/warm_start.py). ``routes_later``: include
    only the routers a first search needs (api/route_table.py); ``app.state.routes_later``
    then includes the rest (None: every router is in)."""
    local_mode = _local_mode(settings)  # before anything opens: a refusal leaves nothing behind
    server = settings.server
    insecure = check_bind(
        server.host,
        tls=server.tls.self_signed or bool(server.tls.cert_file),
        insecure_bind=server.insecure_bind,
    )
    if insecure:
        log.warning(insecure)
    parts = components or ServerParts(settings)
    counters = counters or (SharedCounters(parts.shared) if parts.replicated else MemoryCounters())

    mcp = (
        create_mcp_endpoint(
            get_service=lambda: parts.service,
            authenticate=authenticate,
            max_body_bytes=settings.server.max_body_bytes,
        )
        if settings.mem0.mcp.enabled
        else None
    )

    try:
        oauth = _oauth(settings, parts)
    except BaseException:
        parts.close()
        raise

    if local_mode is not None:  # the local user exists from the start, as OpenMemory's default user did
        with parts.database.session() as session:
            parts.service.owners.user(session, local_mode.user)

    @asynccontextmanager
    async def lifespan(application: FastAPI) -> AsyncIterator[None]:
        stop = asyncio.Event()
        # The start-up reconciliation runs while the server answers: it never delays start-up.
        jobs = asyncio.create_task(_run_jobs(parts, jobs_after, stop), name="jobs")
        try:
            if mcp is None:
                yield
            else:
                async with mcp.run():
                    yield
        finally:
            stop.set()
            try:
                await jobs
            finally:
                parts.close()

    app = FastAPI(
        title="claude-code-memory",
        version=__version__,
        description="Self-hosted, OpenMemory-compatible memory server. Every route but /health "
        "needs `Authorization: Bearer <token>`.",
        lifespan=lifespan,
    )
    app.state.parts = parts  # what api/deps.py hands the routes
    app.state.settings = settings
    app.state.identity = parts.identity
    app.state.devices = Devices(parts.database, parts.identity)
    app.state.local_mode = local_mode
    app.state.oauth = oauth
    app.state.login_throttle = LoginThrottle(counters, server.rate_limit.login_failures)
    errors.install(app)

    @app.get("/health", tags=["health"], summary="Database and vector store status (no auth)")
    def health() -> JSONResponse:
        status = parts.service.health()
        healthy = all(value == "ok" for value in status.values())
        body: dict[str, Any] = {
            "service": SERVICE_NAME,  # what a client checks to know it reached this server
            "status": "ok" if healthy else "degraded",
            "version": __version__,
            **status,
        }
        body["disk"] = parts.engine.disk.status()  # writes_refused: true while the disk is low (507)
        body["reconciliation"] = (
            parts.reconciler.status()
        )  # the last pass (memories/lifecycle/reconcile.py), or null
        # The web UI shows a banner and `ccmem doctor` a warning while it is on.
        body["local_mode"] = {"enabled": local_mode is not None, "user": local_mode and local_mode.user}
        if parts.replicated:  # which jobs this replica runs (docs/team.md)
            body["jobs"] = parts.jobs_status()
        return JSONResponse(body, status_code=200 if healthy else 503)

    # Every router, or the first search's alone and the others once it is answered (serve).
    routers = Routers(app, first_only=routes_later)
    app.state.routes_later = routers.later
    if mcp is not None:
        app.router.routes.extend(mcp.routes)
    if oauth is not None:
        from .routes import oauth as oauth_routes  # loads the MCP SDK's auth: only when on

        app.router.routes.extend(oauth_routes.routes(oauth, parts.identity))

    # Inside CORS: a 429 carries the allowed origin's headers, so a page can read Retry-After.
    limits = RequestLimits(counters, server.rate_limit.per_token, server.rate_limit.per_address)
    app.add_middleware(RateLimit, limits=limits, count_loopback=server.rate_limit.loopback)
    if settings.server.cors_origins or local_mode is not None:
        app.add_middleware(
            CORSMiddleware,
            allow_origins=settings.server.cors_origins,
            allow_origin_regex=LOOPBACK_ORIGIN if local_mode is not None else None,
            allow_methods=["*"],
            allow_headers=["Authorization", "Content-Type", "Accept", "Mcp-Session-Id"],
            expose_headers=["Retry-After"],
        )
    app.add_middleware(StripTrailingSlash)
    # The hook route answers a body it cannot take with 200 {}: a hook never stops a session.
    quiet = (f"{hooks.router.prefix}/claude-code",)
    # Inside BodyLimit: a body is capped before these read it whole.
    app.add_middleware(
        RejectLoneSurrogates, per_item={f"{memories.router.prefix}/batch": "items"}, quiet_paths=quiet
    )
    app.add_middleware(JsonDepthLimit, quiet_paths=quiet)
    app.add_middleware(
        BodyLimit,
        max_bytes=settings.server.max_body_bytes,
        exempt_prefixes=("/api/v1/backup/import",),
        exempt_max_bytes=settings.server.max_body_bytes * IMPORT_BODY_FACTOR,
        quiet_paths=quiet,
    )
    # Outermost: every part below counts a request under the address this finds.
    app.add_middleware(ForwardedFor, proxies=server.trusted_proxies)
    return app


async def _run_jobs(
    parts: ServerParts, after: Callable[[], Awaitable[None]] | None, stop: asyncio.Event
) -> None:
    """The jobs that run beside requests, from when ``after`` returns until ``stop`` is set."""
    if after is not None:
        waiting, stopping = asyncio.ensure_future(after()), asyncio.ensure_future(stop.wait())
        await asyncio.wait({waiting, stopping}, return_when=asyncio.FIRST_COMPLETED)
        waiting.cancel()
        stopping.cancel()
        if stop.is_set():
            return
    async with (
        parts.reconciler.running(),
        parts.sweeper.running(),
        parts.hygiene_scheduler.running(),
        parts.pruner.running(),
        parts.history_purge.running(),
    ):
        await stop.wait()


def _local_mode(settings: Settings) -> LocalMode | None:
    """``auth.local_mode`` when it is on; a ConfigError when the server would bind elsewhere."""
    local = settings.auth.local_mode
    if not local.enabled:
        return None
    require_loopback(settings.server.host)
    log.warning(
        "LOCAL MODE IS ON: requests without a token act as user %r (names %s), from this machine "
        "only (auth.local_mode; see docs/openmemory.md)",
        local.user,
        ", ".join(local.aliases) or "none",
    )
    return LocalMode(user=local.user, aliases=frozenset(local.aliases), port=settings.server.port)


def _oauth(settings: Settings, parts: ServerParts) -> Any:
    """``auth.oauth`` (docs/oauth.md) when it is on: the resource server and, without an
    external issuer, the built-in authorization server."""
    if not settings.auth.oauth.enabled:
        return None
    from ..auth import oauth

    built = oauth.build(settings, parts.database)
    assert built is not None
    log.info(
        "OAuth is on: resource %s, authorization server %s",
        built.resource.resource,
        built.resource.authorization_servers[0],
    )
    return built
