"""The API server's composition root: the only place that reads settings and wires parts."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI
from fastapi.middleware.cors import CORSMiddleware
from fastapi.responses import JSONResponse

from .. import __version__
from ..config import Settings
from ..mcp import create_mcp_endpoint
from ..memories.components import Components
from ..memories.reconcile import Reconciler
from ..memories.retention import Retention, Sweeper
from . import errors
from .deps import authenticate
from .middleware import BodyLimit, RejectLoneSurrogates, StripTrailingSlash
from .routes import (
    admin,
    apps,
    backup,
    browse,
    capture,
    config,
    consent,
    hooks,
    insights,
    me,
    memories,
    profile,
    stats,
    tiers,
    tokens,
)
from .routes import retention as retention_routes

log = logging.getLogger(__name__)

#: Backup imports upload a zip; they get this many times the ordinary body cap.
IMPORT_BODY_FACTOR = 50


def create_app(settings: Settings, components: Components | None = None) -> FastAPI:
    parts = components or Components(settings)

    mcp = (
        create_mcp_endpoint(
            get_service=lambda: parts.service,
            authenticate=authenticate,
            max_body_bytes=settings.server.max_body_bytes,
        )
        if settings.mem0.mcp.enabled
        else None
    )

    reconciler = Reconciler(parts.service)

    @asynccontextmanager
    async def lifespan(application: FastAPI) -> AsyncIterator[None]:
        retention = application.state.retention = Retention(parts.service)
        try:
            # The start-up reconciliation runs while the server answers: it never delays start-up.
            async with (
                reconciler.running(),
                Sweeper(retention, settings.privacy.purge_interval_minutes).running(),
            ):
                if mcp is None:
                    yield
                else:
                    async with mcp.run():
                        yield
        finally:
            parts.close()

    app = FastAPI(
        title="claude-code-memory",
        version=__version__,
        description="Self-hosted, OpenMemory-compatible memory server. Every route but /health "
        "needs `Authorization: Bearer <token>`.",
        lifespan=lifespan,
    )
    app.state.settings = settings
    app.state.database = parts.database
    app.state.identity = parts.identity
    app.state.service = parts.service
    app.state.reconciler = reconciler
    errors.install(app)

    @app.get("/health", tags=["health"], summary="Database and vector store status (no auth)")
    def health() -> JSONResponse:
        status = parts.service.health()
        healthy = all(value == "ok" for value in status.values())
        body: dict[str, Any] = {"status": "ok" if healthy else "degraded", "version": __version__, **status}
        body["disk"] = parts.engine.disk.status()  # writes_refused: true while the disk is low (507)
        body["reconciliation"] = reconciler.status()  # the last pass (memories/reconcile.py), or null
        return JSONResponse(body, status_code=200 if healthy else 503)

    # browse, insights, me and tokens serve the web UI (and anyone else): see docs/ui.md.
    for module in (
        browse,
        memories,
        apps,
        stats,
        config,
        backup,
        capture,
        hooks,
        consent,
        insights,
        me,
        tokens,
        profile,
        tiers,
    ):
        app.include_router(module.router)
    app.include_router(retention_routes.router)
    app.include_router(admin.router)
    if mcp is not None:
        app.router.routes.extend(mcp.routes)

    if settings.server.cors_origins:
        app.add_middleware(
            CORSMiddleware,
            allow_origins=settings.server.cors_origins,
            allow_methods=["*"],
            allow_headers=["Authorization", "Content-Type", "Accept", "Mcp-Session-Id"],
        )
    app.add_middleware(StripTrailingSlash)
    # Inside BodyLimit: a body is capped before this reads it whole.
    app.add_middleware(RejectLoneSurrogates)
    app.add_middleware(
        BodyLimit,
        max_bytes=settings.server.max_body_bytes,
        exempt_prefixes=("/api/v1/backup/import",),
        exempt_max_bytes=settings.server.max_body_bytes * IMPORT_BODY_FACTOR,
    )
    return app
