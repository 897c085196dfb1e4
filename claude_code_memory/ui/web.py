"""What every page shares: templates, the signed-in session, CSRF checks, flash messages and
the one translation of failures into pages (never a traceback)."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import quote, urlsplit

from fastapi import Depends, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.templating import Jinja2Templates

from ..config import UiSettings
from ..rate_limits.limiter import LoginThrottle, MemoryCounters
from .api import Api, ApiError, ApiUnavailable
from .session import FLASH_COOKIE, SESSION_COOKIE, Sealer, Session, same_token
from .signouts import SignedOut

log = logging.getLogger(__name__)

HERE = Path(__file__).resolve().parent
templates = Jinja2Templates(directory=str(HERE / "templates"))
FLASH_MAX_AGE = 120
#: Seconds between two looks at the API's local mode (``/health``), for the pages' banner.
LOCAL_MODE_RECHECK = 30.0


@dataclass
class Ui:
    """The UI process's parts, on ``app.state.ui``."""

    settings: UiSettings
    api: Api
    sealer: Sealer
    signed_out: SignedOut
    #: Failed sign-ins per address (server.rate_limit.login_failures).
    throttle: LoginThrottle = field(default_factory=lambda: LoginThrottle(MemoryCounters(), "5/15 minutes"))
    #: The API's ``local_mode`` report when it is on (None: off or unknown), and when it was read.
    local_mode: dict[str, Any] | None = None
    local_mode_read_at: float = -LOCAL_MODE_RECHECK

    def local_mode_notice(self) -> dict[str, Any] | None:
        """The API's local mode while it is on: every page shows a banner then."""
        now = time.monotonic()
        if now - self.local_mode_read_at >= LOCAL_MODE_RECHECK:
            report = (self.api.health() or {}).get("local_mode")
            self.local_mode = report if isinstance(report, dict) and report.get("enabled") else None
            self.local_mode_read_at = now
        return self.local_mode

    @property
    def max_age(self) -> int:
        return self.settings.session_max_age_hours * 3600


class SignInRequired(Exception):
    """No valid session: the page redirects to the sign-in form."""


class CsrfRejected(Exception):
    """A state-changing request without the session's CSRF token (or from another origin)."""


def ui_of(request: Request) -> Ui:
    return request.app.state.ui


def set_cookie(response: Response, ui: Ui, name: str, value: str, max_age: int) -> None:
    response.set_cookie(
        name,
        value,
        max_age=max_age,
        httponly=True,
        samesite="strict",
        secure=ui.settings.secure_cookies,
        path="/",
    )


def clear_cookie(response: Response, ui: Ui, name: str) -> None:
    response.delete_cookie(
        name, path="/", httponly=True, samesite="strict", secure=ui.settings.secure_cookies
    )


def current_session(request: Request) -> Session:
    ui = ui_of(request)
    session = ui.sealer.open_session(request.cookies.get(SESSION_COOKIE), ui.max_age)
    if session is None or session.id in ui.signed_out:
        raise SignInRequired()
    request.state.session = session
    return session


def same_origin(request: Request) -> bool:
    """A browser's Origin (or Referer) must name this server; requests without either (not a
    browser) still need the CSRF token."""
    source = request.headers.get("origin") or request.headers.get("referer")
    if not source or source == "null":
        return source is None
    return urlsplit(source).netloc == request.headers.get("host", "")


async def checked_session(request: Request) -> Session:
    """The session of a state-changing request whose form carries the session's CSRF token."""
    session = current_session(request)
    form = await request.form()
    given = form.get("csrf")
    if not same_origin(request) or not same_token(session.csrf, given if isinstance(given, str) else None):
        raise CsrfRejected()
    return session


SessionDep = Annotated[Session, Depends(current_session)]
CheckedDep = Annotated[Session, Depends(checked_session)]


def flash(response: Response, request: Request, message: str, kind: str = "ok") -> Response:
    ui = ui_of(request)
    set_cookie(response, ui, FLASH_COOKIE, ui.sealer.seal({"message": message, "kind": kind}), FLASH_MAX_AGE)
    return response


def redirect(
    url: str, request: Request | None = None, message: str | None = None, kind: str = "ok"
) -> Response:
    response = RedirectResponse(url, status_code=303)
    if message and request is not None:
        flash(response, request, message, kind)
    return response


def refused(request: Request, back: str, exc: ApiError) -> Response:
    """A change the API refused (a 4xx: a conflict, a bad value, an unknown id) as a message on
    the page it came from; a lost sign-in still goes to the sign-in form."""
    if exc.status == 401:
        raise exc
    return redirect(back, request, exc.detail, "error")


def render(request: Request, template: str, status: int = 200, **context: Any) -> HTMLResponse:
    ui = ui_of(request)
    session: Session | None = getattr(request.state, "session", None)
    notice = ui.sealer.open(request.cookies.get(FLASH_COOKIE), FLASH_MAX_AGE)
    response = templates.TemplateResponse(
        request,
        template,
        {
            "session": session,
            "csrf": session.csrf if session else "",
            "flash": notice,
            "local_mode": ui.local_mode_notice(),
            **context,
        },
        status_code=status,
    )
    if notice is not None:
        clear_cookie(response, ui, FLASH_COOKIE)
    response.headers["Cache-Control"] = "no-store"
    return response


def error_page(request: Request, status: int, title: str, message: str) -> HTMLResponse:
    return render(request, "error.html", status=status, title=title, message=message, status_code=status)


def install_error_pages(app: Any) -> None:
    @app.exception_handler(SignInRequired)
    async def _sign_in(request: Request, _: SignInRequired) -> Response:
        target = request.url.path if request.method == "GET" else "/"
        return RedirectResponse(f"/signin?next={quote(target)}", status_code=303)

    @app.exception_handler(CsrfRejected)
    async def _csrf(request: Request, _: CsrfRejected) -> Response:
        return error_page(
            request,
            403,
            "Request refused",
            "This form was not sent from this page (missing or stale security token). "
            "Reload the page and try again.",
        )

    @app.exception_handler(ApiError)
    async def _api_error(request: Request, exc: ApiError) -> Response:
        if exc.status == 401:
            response = redirect(
                "/signin", request, "Your sign-in is no longer valid; sign in again.", "error"
            )
            clear_cookie(response, ui_of(request), SESSION_COOKIE)
            return response
        titles = {403: "Not allowed", 404: "Not found", 413: "Too large"}
        status = exc.status if exc.status in (403, 404, 409, 413) else 400
        return error_page(request, status, titles.get(exc.status, "That did not work"), exc.detail)

    @app.exception_handler(ApiUnavailable)
    async def _unavailable(request: Request, exc: ApiUnavailable) -> Response:
        log.warning("API unavailable: %s", exc)
        return error_page(request, 503, "The memory server is not available", f"{exc}. Try again shortly.")

    @app.exception_handler(RequestValidationError)
    async def _bad_request(request: Request, exc: RequestValidationError) -> Response:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e.get('loc', ())[1:]) or 'input'}: {e.get('msg')}"
            for e in exc.errors()
        )
        return error_page(request, 400, "That did not work", f"Invalid input: {problems}")

    @app.exception_handler(404)
    async def _not_found(request: Request, _: Exception) -> Response:
        return error_page(request, 404, "Not found", "There is no page at this address.")

    @app.exception_handler(405)
    async def _not_allowed(request: Request, _: Exception) -> Response:
        return error_page(request, 405, "Not allowed", "This address does not accept that kind of request.")

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> Response:
        log.exception("unhandled error on %s %s", request.method, request.url.path)
        return error_page(
            request, 500, "Something went wrong", "The web UI hit an error; its log has details."
        )
