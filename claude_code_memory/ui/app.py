"""The web UI's composition root: the only place that reads its settings and wires its parts."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.responses import Response
from fastapi.staticfiles import StaticFiles

from .. import __version__
from ..config import UiSettings
from ..rate_limits.limiter import ForwardedFor, LoginThrottle, MemoryCounters
from . import (
    account,
    curation,
    devices,
    entities,
    hygiene,
    insights,
    links,
    memories,
    profile,
    scopes,
    teams,
    trash,
)
from .api import Api
from .session import Sealer
from .signouts import SignedOut
from .web import HERE, Ui, install_error_pages, templates

SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; "
        "frame-ancestors 'none'; form-action 'self'; base-uri 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "same-origin",
}


def when(value: object) -> str:
    """Epoch seconds or an ISO time as ``2026-11-22 07:58 UTC``; '' for nothing."""
    if value in (None, ""):
        return ""
    try:
        if isinstance(value, int | float):
            moment = datetime.fromtimestamp(value, UTC)
        else:
            moment = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
            moment = moment if moment.tzinfo else moment.replace(tzinfo=UTC)
    except (ValueError, OverflowError, OSError):
        return str(value)
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")


def create_app(
    settings: UiSettings,
    signed_out_path: Path | None = None,
    login_failures: str = "5/15 minutes",
    trusted_proxies: Sequence[str] = (),
) -> FastAPI:
    """``signed_out_path`` keeps the signed-out sessions across restarts (``None``: memory only);
    ``login_failures``: failed sign-ins one address may make before it waits;
    ``trusted_proxies``: whose ``X-Forwarded-For`` names that address (``server.trusted_proxies``)."""
    ui = Ui(
        settings=settings,
        api=Api(settings.api_url),
        sealer=Sealer(settings.session_secret),
        signed_out=SignedOut(signed_out_path),
        throttle=LoginThrottle(MemoryCounters(), login_failures),
    )

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        try:
            yield
        finally:
            ui.api.close()

    app = FastAPI(
        title="claude-code-memory UI",
        version=__version__,
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
        openapi_url=None,
    )
    app.state.ui = ui
    templates.env.filters["when"] = when
    templates.env.globals["version"] = __version__
    install_error_pages(app)

    @app.middleware("http")
    async def security_headers(
        request: Request, call_next: Callable[[Request], Awaitable[Response]]
    ) -> Response:
        response = await call_next(request)
        for name, value in SECURITY_HEADERS.items():
            response.headers.setdefault(name, value)
        return response

    @app.get("/healthz", include_in_schema=False)
    def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/favicon.ico", include_in_schema=False)
    def favicon() -> Response:
        # Browsers ask for it whatever the page says; an SVG answers (modern browsers take it).
        icon = (HERE / "static" / "favicon.svg").read_bytes()
        return Response(icon, media_type="image/svg+xml", headers={"Cache-Control": "max-age=86400"})

    app.mount("/static", StaticFiles(directory=str(HERE / "static")), name="static")
    for module in (
        account,
        curation,
        devices,
        insights,
        memories,
        profile,
        scopes,
        links,
        entities,
        hygiene,
        trash,
        teams,
    ):
        app.include_router(module.router)
    app.add_middleware(ForwardedFor, proxies=trusted_proxies)
    return app
