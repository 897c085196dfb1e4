"""Request dependencies: the caller's principal and the services, from app state."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from ..auth.identity import Identity, Principal, validate_user_id
from ..memories.service import MemoryService


# Async because they only read app state: FastAPI runs a sync dependency in a worker thread,
# and each such hop costs a search about half a millisecond (more when threads compete for the
# GIL). get_principal stays sync: it may query the database.
async def get_service(request: Request) -> MemoryService:
    return request.app.state.service


async def get_identity(request: Request) -> Identity:
    return request.app.state.identity


_bearer = HTTPBearer(
    auto_error=False, description="A user token from `ccmem token create`, or the admin token"
)


def authenticate(request: Request) -> Principal:
    """The request's principal; raises Unauthorised. Cached on the request."""
    principal = getattr(request.state, "principal", None)
    if principal is None:
        principal = request.app.state.identity.authenticate(request.headers.get("authorization"))
        request.state.principal = principal
    return principal


def get_principal(request: Request, _: HTTPAuthorizationCredentials | None = Depends(_bearer)) -> Principal:
    return authenticate(request)


#: The bearer scheme alone (for the OpenAPI docs), for a route that calls :func:`authenticate`
#: itself, in the same worker thread as the rest of its work.
BearerDep = Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]


def acting_user(principal: Principal, user_id: str | None) -> str:
    """The user a request acts for: the given ``user_id`` (checked against the token) or the
    token's own user when it is omitted. The admin token must always name a user."""
    if user_id is None:
        if principal.user_id is None:
            from ..errors import BadInput

            raise BadInput("user_id is required with the admin token")
        return principal.user_id
    validate_user_id(user_id)
    principal.require_user(user_id)
    return user_id


ServiceDep = Annotated[MemoryService, Depends(get_service)]
IdentityDep = Annotated[Identity, Depends(get_identity)]
PrincipalDep = Annotated[Principal, Depends(get_principal)]
