"""The Teams pages (docs/teams.md): your teams, creating one, joining with a code; a team's
members and memories, inviting and removing members (owners), sharing a memory, leaving,
deleting the team (owners)."""

from __future__ import annotations

from typing import Annotated
from urllib.parse import quote

from fastapi import APIRouter, Form, Request
from fastapi.responses import Response

from .api import ApiError
from .web import CheckedDep, SessionDep, redirect, refused, render, ui_of

router = APIRouter()


def _team_path(name: str) -> str:
    return f"/api/v1/teams/{quote(name, safe='')}"


@router.get("/teams")
def teams(request: Request, session: SessionDep) -> Response:
    listing = ui_of(request).api.get("/api/v1/teams", session.token)
    return render(request, "teams.html", nav="teams", teams=listing["teams"])


@router.post("/teams/create")
def create(request: Request, session: CheckedDep, name: Annotated[str, Form()]) -> Response:
    try:
        ui_of(request).api.post("/api/v1/teams", session.token, json={"name": name.strip()})
    except ApiError as exc:
        return refused(request, "/teams", exc)
    return redirect(f"/teams/{quote(name.strip(), safe='')}", request, f"Created team {name.strip()}.")


@router.post("/teams/accept")
def accept(request: Request, session: CheckedDep, code: Annotated[str, Form()]) -> Response:
    try:
        joined = ui_of(request).api.post(
            "/api/v1/teams/invitations/accept", session.token, json={"code": code.strip()}
        )
    except ApiError as exc:
        return refused(request, "/teams", exc)
    return redirect(
        f"/teams/{quote(joined['team'], safe='')}", request, f"Joined {joined['team']} as {joined['role']}."
    )


@router.get("/teams/{name}")
def team(request: Request, session: SessionDep, name: str) -> Response:
    api = ui_of(request).api
    try:
        members = api.get(f"{_team_path(name)}/members", session.token)["members"]
        held = api.get(f"{_team_path(name)}/memories", session.token, params={"limit": 50})
    except ApiError as exc:
        return refused(request, "/teams", exc)
    return render(
        request, "team.html", nav="teams", name=name, members=members, held=held, me=session.user_id
    )


@router.post("/teams/{name}/invite")
def invite(
    request: Request,
    session: CheckedDep,
    name: str,
    user_id: Annotated[str, Form()],
    role: Annotated[str, Form()] = "member",
) -> Response:
    back = f"/teams/{quote(name, safe='')}"
    try:
        made = ui_of(request).api.post(
            f"{_team_path(name)}/invitations", session.token, json={"user_id": user_id.strip(), "role": role}
        )
    except ApiError as exc:
        return refused(request, back, exc)
    message = f"Invited {made['invitee']} as {made['role']}. Give them this code (shown once): {made['code']}"
    return redirect(back, request, message)


@router.post("/teams/{name}/remove")
def remove(request: Request, session: CheckedDep, name: str, user_id: Annotated[str, Form()]) -> Response:
    back = f"/teams/{quote(name, safe='')}"
    try:
        ui_of(request).api.delete(f"{_team_path(name)}/members/{quote(user_id, safe='')}", session.token)
    except ApiError as exc:
        return refused(request, back, exc)
    if user_id == session.user_id:
        return redirect("/teams", request, f"You left {name}.")
    return redirect(back, request, f"Removed {user_id}: they lost access at once.")


@router.post("/teams/{name}/share")
def share(request: Request, session: CheckedDep, name: str, memory_id: Annotated[str, Form()]) -> Response:
    back = f"/teams/{quote(name, safe='')}"
    try:
        done = ui_of(request).api.post(
            f"{_team_path(name)}/share", session.token, json={"memory_ids": [memory_id.strip()]}
        )
    except ApiError as exc:
        return refused(request, back, exc)
    event = done["results"][0]["event"]
    return redirect(
        back, request, "Shared (redacted again)." if event == "ADD" else "The team has it already."
    )


@router.post("/teams/{name}/delete")
def delete(request: Request, session: CheckedDep, name: str) -> Response:
    try:
        done = ui_of(request).api.delete(_team_path(name), session.token)
    except ApiError as exc:
        return refused(request, f"/teams/{quote(name, safe='')}", exc)
    count = done["memories_deleted"]
    return redirect(
        "/teams", request, f"Deleted team {name} and its {count} {'memory' if count == 1 else 'memories'}."
    )
