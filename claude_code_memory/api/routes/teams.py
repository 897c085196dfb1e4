"""Teams over REST (docs/teams.md; memories/teams/).

    POST   /api/v1/teams                             {name}: a new team, the caller its owner
    GET    /api/v1/teams                             the caller's teams and roles
    DELETE /api/v1/teams/{team}                      the team and its memories, for good (owner)
    GET    /api/v1/teams/{team}/members              the members (any member)
    GET    /api/v1/teams/{team}/invitations          the open invitations (owner)
    POST   /api/v1/teams/{team}/invitations          {user_id, role}: an invitation code (owner;
                                                     replaces the user's open one)
    DELETE /api/v1/teams/{team}/invitations/{id}     revoke one, by its id or its user's id (owner)
    POST   /api/v1/teams/invitations/accept          {code}: the invited user joins
    PUT    /api/v1/teams/{team}/members/{user_id}    {role}: change a role (owner)
    DELETE /api/v1/teams/{team}/members/{user_id}    remove a member (owner), or leave (oneself)
    POST   /api/v1/teams/{team}/share                {memory_ids}: copies into the team (owner, member)
    GET    /api/v1/teams/{team}/memories             the team's memories (any member; audited)
    DELETE /api/v1/teams/{team}/memories/{id}        remove one (owner; a member what they shared)
    GET    /api/v1/teams/{team}/audit                who read and wrote what (owner)

A team the caller is not in is 404, as one that does not exist.
"""

from __future__ import annotations

import uuid
from typing import Any, Literal

from fastapi import APIRouter, Query, Response
from pydantic import BaseModel, ConfigDict, Field

from ..deps import PrincipalDep, ServiceDep, acting_user

router = APIRouter(prefix="/api/v1/teams", tags=["teams"])

Role = Literal["owner", "member", "reader"]


class CreateTeam(BaseModel):
    model_config = ConfigDict(extra="forbid")

    user_id: str | None = None
    name: str = Field(min_length=1, max_length=63)


class Invite(BaseModel):
    model_config = ConfigDict(extra="forbid")

    user_id: str = Field(min_length=1, max_length=64, description="the user invited")
    role: Role = "member"
    as_user: str | None = Field(None, description="with the admin token: the owner who invites")


class Accept(BaseModel):
    model_config = ConfigDict(extra="forbid")

    user_id: str | None = None
    code: str = Field(min_length=1, max_length=200)


class RoleChange(BaseModel):
    model_config = ConfigDict(extra="forbid")

    role: Role
    as_user: str | None = None


class Share(BaseModel):
    model_config = ConfigDict(extra="forbid")

    user_id: str | None = None
    memory_ids: list[uuid.UUID] = Field(min_length=1, max_length=100)


@router.post("", status_code=201, summary="Create a team; the caller is its owner")
def create_team(body: CreateTeam, service: ServiceDep, principal: PrincipalDep) -> dict[str, Any]:
    return service.teams.create(acting_user(principal, body.user_id), body.name)


@router.get("", summary="The caller's teams and their role in each")
def my_teams(service: ServiceDep, principal: PrincipalDep, user_id: str | None = None) -> dict[str, Any]:
    uid = acting_user(principal, user_id)
    return {"teams": [{"name": m.name, "role": m.role} for m in service.teams.memberships(uid)]}


@router.post("/invitations/accept", summary="Join a team with an invitation code")
def accept(body: Accept, service: ServiceDep, principal: PrincipalDep) -> dict[str, Any]:
    return service.teams.accept(acting_user(principal, body.user_id), body.code)


@router.delete("/{team}", summary="Delete a team and its memories, for good (owners)")
def delete_team(
    team: str, service: ServiceDep, principal: PrincipalDep, user_id: str | None = None
) -> dict[str, Any]:
    return service.team_memories.delete_team(acting_user(principal, user_id), team)


@router.get("/{team}/members", summary="A team's members and roles")
def members(
    team: str, service: ServiceDep, principal: PrincipalDep, user_id: str | None = None
) -> dict[str, Any]:
    return {"team": team, "members": service.teams.members(acting_user(principal, user_id), team)}


@router.post("/{team}/invitations", status_code=201, summary="Invite a user (owners); the code is shown once")
def invite(team: str, body: Invite, service: ServiceDep, principal: PrincipalDep) -> dict[str, Any]:
    return service.teams.invite(acting_user(principal, body.as_user), team, body.user_id, body.role)


@router.get("/{team}/invitations", summary="The team's open invitations (owners)")
def invitations(
    team: str, service: ServiceDep, principal: PrincipalDep, user_id: str | None = None
) -> dict[str, Any]:
    uid = acting_user(principal, user_id)
    return {"team": team, "invitations": service.teams.invitations(uid, team)}


@router.delete(
    "/{team}/invitations/{invitation}",
    summary="Revoke an open invitation, named by its id or by the invited user's id (owners)",
)
def revoke_invitation(
    team: str, invitation: str, service: ServiceDep, principal: PrincipalDep, user_id: str | None = None
) -> dict[str, Any]:
    return service.teams.revoke(acting_user(principal, user_id), team, invitation)


@router.put("/{team}/members/{member}", summary="Change a member's role (owners)")
def set_role(
    team: str, member: str, body: RoleChange, service: ServiceDep, principal: PrincipalDep
) -> dict[str, Any]:
    return service.teams.set_role(acting_user(principal, body.as_user), team, member, body.role)


@router.delete("/{team}/members/{member}", status_code=204, summary="Remove a member (owners), or leave")
def remove_member(
    team: str, member: str, service: ServiceDep, principal: PrincipalDep, user_id: str | None = None
) -> Response:
    service.teams.remove(acting_user(principal, user_id), team, member)
    return Response(status_code=204)


@router.post("/{team}/share", summary="Share memories into the team (owners, members): redacted again")
def share(team: str, body: Share, service: ServiceDep, principal: PrincipalDep) -> dict[str, Any]:
    uid = acting_user(principal, body.user_id)
    return {"team": team, "results": service.team_memories.share(uid, team, body.memory_ids)}


@router.get("/{team}/memories", summary="The team's memories, newest first (each read is audited)")
def team_memories(
    team: str,
    service: ServiceDep,
    principal: PrincipalDep,
    user_id: str | None = None,
    limit: int = Query(100, ge=1, le=1000),
) -> dict[str, Any]:
    return service.team_memories.memories(acting_user(principal, user_id), team, limit)


@router.delete("/{team}/memories/{memory_id}", status_code=204, summary="Remove a memory from the team")
def unshare(
    team: str, memory_id: uuid.UUID, service: ServiceDep, principal: PrincipalDep, user_id: str | None = None
) -> Response:
    service.team_memories.unshare(acting_user(principal, user_id), team, memory_id)
    return Response(status_code=204)


@router.get("/{team}/audit", summary="Who read and wrote which team memory (owners)")
def audit_log(
    team: str,
    service: ServiceDep,
    principal: PrincipalDep,
    user_id: str | None = None,
    limit: int = Query(200, ge=1, le=10_000),
) -> dict[str, Any]:
    return {"team": team, "entries": service.teams.audit_log(acting_user(principal, user_id), team, limit)}
