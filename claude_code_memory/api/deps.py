"""Request dependencies: the caller's principal, the memory service and the jobs, from app state.

Routes reach what the composition root built through these typed dependencies (``ServiceDep``,
``HygieneDep``...), never through ``request.app.state`` themselves."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from starlette.routing import Match, Route

from ..auth.devices import Devices
from ..auth.identity import Identity, Principal
from ..auth.identity import acting_user as acting_user  # the routes import it from here
from ..auth.local_mode import LocalMode
from ..config import Settings
from ..memories.hygiene.proposals import Hygiene
from ..memories.lifecycle.reconcile import Reconciler
from ..memories.lifecycle.retention import Retention
from ..memories.server_parts import ServerParts
from ..memories.service import MemoryService


# Async because they only read app state: FastAPI runs a sync dependency in a worker thread,
# and each such hop costs a search about half a millisecond (more when threads compete for the
# GIL). get_principal stays sync: it may query the database.
async def get_service(request: Request) -> MemoryService:
    parts: ServerParts = request.app.state.parts
    return parts.service


async def get_hygiene(request: Request) -> Hygiene:
    parts: ServerParts = request.app.state.parts
    return parts.hygiene


async def get_retention(request: Request) -> Retention:
    parts: ServerParts = request.app.state.parts
    return parts.retention


async def get_reconciler(request: Request) -> Reconciler:
    parts: ServerParts = request.app.state.parts
    return parts.reconciler


async def get_settings(request: Request) -> Settings:
    settings: Settings = request.app.state.settings
    return settings


async def get_identity(request: Request) -> Identity:
    return request.app.state.identity


async def get_devices(request: Request) -> Devices:
    return request.app.state.devices


_bearer = HTTPBearer(
    auto_error=False, description="A user token from `ccmem token create`, or the admin token"
)


def authenticate(request: Request) -> Principal:
    """The request's principal; raises Unauthorised (Forbidden: a local-mode request that is not
    from this machine). Cached on the request."""
    principal = getattr(request.state, "principal", None)
    if principal is None:
        authorization = request.headers.get("authorization")
        local: LocalMode | None = request.app.state.local_mode
        if local is not None and not authorization:  # auth.local_mode: no token, this machine only
            headers = request.headers
            origin, fetch_site = headers.get("origin"), headers.get("sec-fetch-site")
            principal = local.principal(headers.get("host"), origin, fetch_site)
        else:
            oauth = getattr(request.app.state, "oauth", None)  # auth.oauth (docs/oauth.md)
            if oauth is None:
                principal = request.app.state.identity.authenticate(authorization)
            else:
                principal = oauth.resource.authenticate(authorization, request.app.state.identity)
                # By the route that matched (its template), never by the path's own words.
                oauth.resource.require_route(principal, request.method, route_template(request))
        request.state.principal = principal
    return principal


def route_template(request: Request) -> str | None:
    """The path template of the route that matched the request (``/api/v1/teams/{team}``).
    FastAPI names its own routes in the scope; a plain Starlette route (MCP's, OAuth's) is
    found again by its endpoint and a match of the path."""
    route = request.scope.get("route")
    if route is not None:
        return str(route.path)
    endpoint = request.scope.get("endpoint")
    for candidate in request.app.router.routes:
        if (
            isinstance(candidate, Route)
            and candidate.endpoint is endpoint
            and candidate.matches(request.scope)[0] is not Match.NONE
        ):
            return candidate.path
    return None


def get_principal(request: Request, _: HTTPAuthorizationCredentials | None = Depends(_bearer)) -> Principal:
    return authenticate(request)


#: The bearer scheme alone (for the OpenAPI docs), for a route that calls :func:`authenticate`
#: itself, in the same worker thread as the rest of its work.
BearerDep = Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]


ServiceDep = Annotated[MemoryService, Depends(get_service)]
HygieneDep = Annotated[Hygiene, Depends(get_hygiene)]
RetentionDep = Annotated[Retention, Depends(get_retention)]
ReconcilerDep = Annotated[Reconciler, Depends(get_reconciler)]
SettingsDep = Annotated[Settings, Depends(get_settings)]
IdentityDep = Annotated[Identity, Depends(get_identity)]
DevicesDep = Annotated[Devices, Depends(get_devices)]
PrincipalDep = Annotated[Principal, Depends(get_principal)]
