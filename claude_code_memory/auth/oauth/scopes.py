"""What each OAuth scope lets a token do; which scope each route and tool needs is the table of
:mod:`.route_scopes`.

    memory:read    read memories (list, search, get, MCP read-only tools and resources)
    memory:write   add, change and delete memories (and everything a hook or capture writes)
    admin          what the admin token may do; granted only to someone who signs in with it

A principal without scopes (``Principal.scopes is None``: a token from ``ccmem token create``,
the admin token, the local mode) has every right it had before OAuth. Pure functions.
"""

from __future__ import annotations

from collections.abc import Iterable

from ...errors import Forbidden
from ..identity import Principal

READ = "memory:read"
WRITE = "memory:write"
ADMIN = "admin"
ALL = (READ, WRITE, ADMIN)
#: A user who signs in with their own token can grant these; ``admin`` needs the admin token.
USER_SCOPES = (READ, WRITE)
DESCRIPTIONS = {
    READ: "read your memories",
    WRITE: "add, change and delete your memories",
    ADMIN: "administer this server (everyone's memories, tokens, backups, configuration)",
}


class InsufficientScope(Forbidden):
    """403 with ``WWW-Authenticate: Bearer error="insufficient_scope"`` (RFC 6750 §3.1)."""

    code = "insufficient_scope"

    def __init__(self, needed: str, challenge: str) -> None:
        super().__init__(f"this token's scopes do not include {needed!r}, which this request needs")
        self.needed = needed
        # An instance's own headers: the challenge names the scope this request needed.
        self.headers = {"WWW-Authenticate": challenge}  # type: ignore[misc]


def parse(scope: str | Iterable[str] | None) -> frozenset[str]:
    """A scope parameter or claim (space-separated, or a list as some issuers send) as a set."""
    if scope is None:
        return frozenset()
    if isinstance(scope, str):
        return frozenset(part for part in scope.split() if part)
    return frozenset(str(part) for part in scope)


def grantable(requested: Iterable[str], *, admin: bool) -> list[str]:
    """The requested scopes a person may grant: all of ours for the admin, else the user's."""
    allowed = ALL if admin else USER_SCOPES
    return [scope for scope in ALL if scope in set(requested) and scope in allowed]


def allows(principal: Principal, needed: str) -> bool:
    """Whether the principal's token carries ``needed`` (a token without scopes carries all;
    ``admin`` implies the others)."""
    scopes = principal.scopes
    if scopes is None:
        return True
    return needed in scopes or ADMIN in scopes
