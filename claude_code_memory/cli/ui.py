"""``ccmem ui``: run the management web UI (its own process; it calls the API over HTTP)."""

from __future__ import annotations

import logging
import signal
import sys
from typing import Annotated

import typer

from . import common
from .common import ConfigOpt, err


def ui(
    host: Annotated[str | None, typer.Option(help="bind address (default ui.host, 127.0.0.1)")] = None,
    port: Annotated[int | None, typer.Option(help="port (default ui.port, 3000)")] = None,
    api_url: Annotated[
        str | None, typer.Option("--api-url", help="the API the UI calls (default ui.api_url)")
    ] = None,
    config: ConfigOpt = None,
) -> None:
    """Run the web UI: browse, search, curate memories and decide on pending captures."""
    common.private_files()
    import uvicorn

    from ..ui.app import create_app

    settings = common.settings(config, {"ui.host": host, "ui.port": port, "ui.api_url": api_url})
    logging.basicConfig(
        level=settings.server.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    # httpx logs each request line at INFO; the lines carry no token, but there is no need for them.
    logging.getLogger("httpx").setLevel(logging.WARNING)
    chosen = settings.ui
    if not chosen.session_secret:
        err.print("note: no ui.session_secret (CCMEM_UI_SECRET): sign-ins end when the UI restarts")
    err.print(f"claude-code-memory UI on http://{chosen.host}:{chosen.port} (API: {chosen.api_url})")
    # uvicorn handles SIGTERM itself (stops accepting, finishes requests), then re-raises it
    # under the handler it found: this one, so a supervisor's stop is an exit 0, not a kill.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    uvicorn.run(
        create_app(
            chosen,
            signed_out_path=settings.data_path / "ui" / "signed-out.json",
            login_failures=settings.server.rate_limit.login_failures,
            trusted_proxies=settings.server.trusted_proxies,
        ),
        host=chosen.host,
        port=chosen.port,
        log_level=settings.server.log_level,
        access_log=False,
        # The app reads forwarded headers itself, from server.trusted_proxies only.
        proxy_headers=False,
    )
