"""`GET /api/v1/me`: who a token belongs to, so a client (the web UI) can sign a user in."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from ..deps import PrincipalDep

router = APIRouter(prefix="/api/v1", tags=["identity"])


@router.get("/me", summary="The token's user (null for the admin token) and whether it is the admin")
def whoami(principal: PrincipalDep) -> dict[str, Any]:
    return {"user_id": principal.user_id, "is_admin": principal.is_admin}
