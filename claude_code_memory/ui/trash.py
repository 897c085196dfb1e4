"""The Trash page: deleted memories that can still be restored (``privacy.trash_days`` > 0),
restored or purged now. With the trash off the page says so: a delete erases at once."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Annotated

from fastapi import APIRouter, Form, Query, Request
from fastapi.responses import Response

from .api import Api, ApiError
from .scopes import memories
from .session import Session
from .web import CheckedDep, SessionDep, redirect, refused, render, ui_of

router = APIRouter()

PAGE_SIZE = 25


def trash_days(api: Api, session: Session) -> int:
    """How long the API keeps deleted memories restorable (0: the trash is off)."""
    return int(api.get("/api/v1/trash", session.token, params={"size": 1}).get("trash_days") or 0)


def purged_after(deleted_at: str | None, days: int) -> str | None:
    """When the retention sweep may purge a memory deleted at ``deleted_at`` (ISO), as ISO."""
    if not deleted_at or days <= 0:
        return None
    try:
        moment = datetime.fromisoformat(deleted_at.replace("Z", "+00:00"))
    except ValueError:
        return None
    return (moment + timedelta(days=days)).isoformat()


@router.get("/trash")
def trash(request: Request, session: SessionDep, page: Annotated[int, Query(ge=1)] = 1) -> Response:
    listing = ui_of(request).api.get("/api/v1/trash", session.token, params={"page": page, "size": PAGE_SIZE})
    days = int(listing.get("trash_days") or 0)
    for item in listing["items"]:
        item["purged_after"] = purged_after(item.get("deleted_at"), days)
    return render(request, "trash.html", nav="trash", trash=listing, trash_days=days)


@router.post("/trash/decide")
def decide(
    request: Request,
    session: CheckedDep,
    decision: Annotated[str, Form()],
    ids: Annotated[list[str] | None, Form()] = None,
) -> Response:
    if decision not in ("restore", "purge"):
        return redirect("/trash", request, f"Unknown decision {decision!r}.", "error")
    if not ids:
        return redirect("/trash", request, "Select at least one memory first.", "error")
    api = ui_of(request).api
    if decision == "purge":
        try:
            purged = api.post("/api/v1/trash/purge", session.token, json={"memory_ids": ids})["purged"]
        except ApiError as exc:  # none of them in the trash (any more)
            return refused(request, "/trash", exc)
        return redirect("/trash", request, f"Purged {memories(purged)} for good.")
    result = api.post("/api/v1/trash/restore", session.token, json={"memory_ids": ids})
    restored, conflicts = result["restored"], result["conflicts"]
    message = f"Restored {memories(len(restored))}."
    if conflicts:
        message += " Kept in the trash: " + "; ".join(f"{c['id'][:8]}: {c['error']}" for c in conflicts[:3])
    return redirect("/trash", request, message, "error" if conflicts else "ok")
