"""Bearer tokens over REST (`/api/v1/tokens`): list, create (shown once), revoke.

A user token manages that user's own tokens; the admin token manages anyone's and must name
the user when creating one. Tokens are stored as digests: a listing shows the id, name and the
first characters (``prefix``), never the token.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict, Field

from ..deps import IdentityDep, PrincipalDep, acting_user

router = APIRouter(prefix="/api/v1/tokens", tags=["tokens"])


class CreateToken(BaseModel):
    model_config = ConfigDict(extra="forbid")

    user_id: str | None = None
    name: str | None = Field(None, max_length=100)


@router.get("", summary="The user's tokens (the admin token: everyone's unless user_id is given)")
def list_tokens(identity: IdentityDep, principal: PrincipalDep, user_id: str | None = None) -> dict[str, Any]:
    owner = acting_user(principal, user_id) if (user_id is not None or not principal.is_admin) else None
    tokens = [asdict(t) for t in identity.list_tokens(owner)]
    return {"tokens": tokens, "total": len(tokens)}


@router.post("", status_code=201, summary="Create a token; the response is the only time it is shown")
def create_token(body: CreateToken, identity: IdentityDep, principal: PrincipalDep) -> dict[str, Any]:
    owner = acting_user(principal, body.user_id)
    token = identity.create_token(owner, body.name or None)
    info = next(t for t in identity.list_tokens(owner) if t.prefix == token[:12])
    return {**asdict(info), "token": token}


@router.delete("/{token_id}", summary="Revoke a token by id or listed prefix")
def revoke_token(token_id: str, identity: IdentityDep, principal: PrincipalDep) -> dict[str, Any]:
    # Only the caller's own tokens are looked at: another user's token is "no token", as an
    # unknown one is, so a token id's existence does not leak.
    info = identity.revoke_token(token_id, None if principal.is_admin else principal.user_id)
    return {"id": info.id, "prefix": info.prefix, "status": "revoked"}
