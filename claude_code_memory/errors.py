"""The library's typed errors, translated once at each edge.

    MemoryStackError (base; never raised itself)
    ├── ConfigError        a setting has a bad value (start-up stops; names key and value)
    ├── BadInput           the caller sent something invalid              → HTTP 422 / MCP tool error
    ├── NotFound           an id that does not exist (for this caller)    → HTTP 404
    ├── Unauthorised       no token, or a token we do not know            → HTTP 401
    ├── Forbidden          a valid token acting on someone else's data    → HTTP 403
    ├── Conflict           the request clashes with the current state     → HTTP 409
    ├── TooLarge           a body or a memory over its cap                → HTTP 413
    ├── Unavailable        a store or the model cannot serve right now    → HTTP 503
    └── InsufficientStorage  too little disk left to write safely         → HTTP 507

The HTTP edge (`api/errors.py`) turns each into one JSON shape
`{"detail": message, "error": code}` with the error's ``headers`` (a 401 names the Bearer
scheme, as RFC 6750 requires); the MCP edge raises it as a tool error; the CLI prints one line
and exits 1.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar


class MemoryStackError(Exception):
    code = "error"
    status = 500
    #: Response headers an HTTP edge sends with it.
    headers: ClassVar[Mapping[str, str]] = {}

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


#: The base's name before 0.2.0, kept for code that catches it.
MemoryError_ = MemoryStackError  # noqa: N816


class ConfigError(MemoryStackError):
    code = "config_error"
    status = 500


class BadInput(MemoryStackError):
    code = "bad_input"
    status = 422


class NotFound(MemoryStackError):
    code = "not_found"
    status = 404


class Unauthorised(MemoryStackError):
    code = "unauthorised"
    status = 401
    headers: ClassVar[Mapping[str, str]] = {"WWW-Authenticate": "Bearer"}


class Forbidden(MemoryStackError):
    code = "forbidden"
    status = 403


class Conflict(MemoryStackError):
    code = "conflict"
    status = 409


class TooLarge(MemoryStackError):
    code = "too_large"
    status = 413


class Unavailable(MemoryStackError):
    code = "unavailable"
    status = 503


class InsufficientStorage(MemoryStackError):
    code = "insufficient_storage"
    status = 507


#: Our server's refusals as the typed errors its clients raise; anything else is Unavailable.
_BY_STATUS: dict[int, type[MemoryStackError]] = {
    400: BadInput,
    401: Unauthorised,
    403: Forbidden,
    404: NotFound,
    409: Conflict,
    413: TooLarge,
    422: BadInput,
    507: InsufficientStorage,
}


def error_for_status(status: int, detail: str) -> MemoryStackError:
    """The typed error for an HTTP refusal from our server (4xx/5xx with a ``detail``)."""
    return _BY_STATUS.get(status, Unavailable)(f"{detail} (HTTP {status})")
