"""The Profile page: what the memory knows about the user and the assistant's knowledge, each
fact editable and deletable (a deleted fact stays deleted), and the mid-term segments' heat."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Form, Request
from fastapi.responses import Response

from .web import CheckedDep, SessionDep, redirect, render, ui_of

router = APIRouter()

USER_CATEGORIES = ("identity", "preference", "tools", "project", "working_style")
SEGMENTS_SHOWN = 20


@router.get("/profile")
def profile(request: Request, session: SessionDep) -> Response:
    api = ui_of(request).api
    body = api.get("/api/v1/profile", session.token)
    segments = api.get("/api/v1/tiers/segments", session.token, params={"limit": SEGMENTS_SHOWN})
    facts = body["facts"]
    return render(
        request,
        "profile.html",
        nav="profile",
        summary=body["summary"],
        user_facts=[f for f in facts if f["subject"] == "user"],
        knowledge=[f for f in facts if f["subject"] == "assistant"],
        categories=USER_CATEGORIES,
        segments=segments["items"],
    )


@router.post("/profile/facts/{fact_id}/edit")
def edit_fact(
    request: Request,
    session: CheckedDep,
    fact_id: str,
    text: Annotated[str, Form()],
    category: Annotated[str | None, Form()] = None,
) -> Response:
    if not text.strip():
        return redirect("/profile", request, "A fact cannot be empty; delete it instead.", "error")
    ui_of(request).api.call(
        "PATCH", f"/api/v1/profile/facts/{fact_id}", session.token, json={"text": text, "category": category}
    )
    return redirect("/profile", request, "Fact updated; the old wording will not come back.")


@router.post("/profile/facts/{fact_id}/delete")
def delete_fact(request: Request, session: CheckedDep, fact_id: str) -> Response:
    ui_of(request).api.delete(f"/api/v1/profile/facts/{fact_id}", session.token)
    return redirect("/profile", request, "Fact deleted; it will not be extracted again.")
