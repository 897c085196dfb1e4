"""One translation of errors to HTTP: `{"detail": message, "error": code}`, never a trace."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import ValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException

from ..errors import MemoryStackError

log = logging.getLogger(__name__)


def error_response(
    status: int, code: str, detail: str, headers: Mapping[str, str] | None = None, **extra: Any
) -> JSONResponse:
    return JSONResponse(
        {"detail": detail, "error": code, **extra}, status_code=status, headers=dict(headers or {})
    )


def _describe_validation(exc: RequestValidationError | ValidationError) -> tuple[str, list[dict[str, Any]]]:
    problems = []
    for error in exc.errors():
        location = ".".join(str(part) for part in error.get("loc", ()) if part != "body") or "body"
        if error.get("type") == "json_invalid":
            problems.append({"field": "body", "message": f"malformed JSON: {error.get('msg')}"})
        else:
            problems.append({"field": location, "message": error.get("msg", "invalid")})
    summary = "; ".join(f"{p['field']}: {p['message']}" for p in problems)
    return summary, problems


def item_error(exc: ValidationError) -> dict[str, Any]:
    """One item of a batch that failed validation, as the batch's per-item error fields."""
    summary, problems = _describe_validation(exc)
    return {"error": summary, "code": "bad_input", "status": 422, "problems": problems}


def install(app: FastAPI) -> None:
    @app.exception_handler(MemoryStackError)
    async def _ours(_: Request, exc: MemoryStackError) -> JSONResponse:
        if exc.status >= 500:
            log.warning("%s: %s", exc.code, exc.message)
        return error_response(exc.status, exc.code, exc.message, exc.headers)

    @app.exception_handler(RequestValidationError)
    async def _validation(_: Request, exc: RequestValidationError) -> JSONResponse:
        summary, problems = _describe_validation(exc)
        return error_response(422, "bad_input", summary, problems=problems)

    @app.exception_handler(StarletteHTTPException)
    async def _http(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = {404: "not_found", 405: "method_not_allowed", 401: "unauthorised", 403: "forbidden"}.get(
            exc.status_code, "http_error"
        )
        return error_response(exc.status_code, code, str(exc.detail), exc.headers)

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
        log.exception("unhandled error on %s %s", request.method, request.url.path)
        return error_response(500, "internal_error", "internal error; the server log has the details")
