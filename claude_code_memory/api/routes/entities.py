"""Links and entities over REST.

    GET    /api/v1/memories/{id}/links          a memory's links, each with the other memory
    POST   /api/v1/memories/{id}/links          link it to another memory: {target_id, relation}
    DELETE /api/v1/links/{link_id}              remove a link
    GET    /api/v1/entities?kind=&limit=        entities, most mentioned first
    GET    /api/v1/entities/search?q=&kind=     entities by name, with their memories

``GET /api/v1/memories/{id}/related`` lists linked memories first (memories.py).
"""

from __future__ import annotations

import uuid
from typing import Any, Literal

from fastapi import APIRouter, Query
from pydantic import BaseModel, ConfigDict, Field

from ..deps import PrincipalDep, ServiceDep, acting_user

router = APIRouter(prefix="/api/v1", tags=["entities"])

Kind = Literal["person", "project", "tool", "file", "identifier"]


class LinkRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    user_id: str | None = None
    target_id: uuid.UUID
    relation: str = Field("related", min_length=1, max_length=64)


def _owner(principal: PrincipalDep, user_id: str | None) -> str | None:
    return None if principal.is_admin and user_id is None else acting_user(principal, user_id)


@router.get("/memories/{memory_id}/links", summary="A memory's links, each with the other memory")
def links(
    memory_id: str, service: ServiceDep, principal: PrincipalDep, user_id: str | None = None
) -> dict[str, Any]:
    return {"links": service.links.of(_owner(principal, user_id), memory_id)}


@router.post("/memories/{memory_id}/links", summary="Link a memory to another (typed relation)")
def link(memory_id: str, body: LinkRequest, service: ServiceDep, principal: PrincipalDep) -> dict[str, Any]:
    uid = acting_user(principal, body.user_id)
    return service.links.link(uid, memory_id, body.target_id, body.relation)


@router.delete("/links/{link_id}", summary="Remove a link")
def unlink(
    link_id: str, service: ServiceDep, principal: PrincipalDep, user_id: str | None = None
) -> dict[str, str]:
    service.links.unlink(acting_user(principal, user_id), link_id)
    return {"message": "link removed"}


@router.get("/entities", summary="People, projects, tools, files and identifiers the memories mention")
def entities(
    service: ServiceDep,
    principal: PrincipalDep,
    user_id: str | None = None,
    kind: Kind | None = None,
    limit: int = Query(100, ge=1, le=500),
) -> dict[str, Any]:
    return {"entities": service.entities.listing(acting_user(principal, user_id), kind=kind, limit=limit)}


@router.get("/entities/search", summary="Entities by name, with the memories that mention each")
def search_entities(
    service: ServiceDep,
    principal: PrincipalDep,
    q: str = Query(min_length=1, max_length=256),
    user_id: str | None = None,
    kind: Kind | None = None,
    limit: int = Query(20, ge=1, le=500),
) -> dict[str, Any]:
    uid = acting_user(principal, user_id)
    return {"entities": service.entities.search(uid, q, kind=kind, limit=limit)}
