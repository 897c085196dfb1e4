"""The Devices page: the user's named tokens and the OAuth clients they let in, with when each
was last used, and a revoke button for each (``/api/v1/devices``; docs/remote.md)."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import Response

from .web import CheckedDep, SessionDep, redirect, render, ui_of

router = APIRouter()


@router.get("/devices")
def devices_page(request: Request, session: SessionDep) -> Response:
    listing = ui_of(request).api.get("/api/v1/devices", session.token)
    return render(
        request, "devices.html", nav="devices", devices=listing["devices"], current_prefix=session.token[:12]
    )


@router.post("/devices/{device_id}/revoke")
def revoke_device(request: Request, session: CheckedDep, device_id: str) -> Response:
    revoked = ui_of(request).api.delete(f"/api/v1/devices/{device_id}", session.token)
    prefix = revoked.get("prefix") or ""
    if len(prefix) >= 12 and session.token.startswith(prefix):
        return redirect("/signin", request, "You revoked the token you were signed in with; sign in again.")
    return redirect("/devices", request, f"Revoked {revoked['name']}: it has no access from now on.")
