"""A user's devices over REST (`/api/v1/devices`): named tokens and authorised OAuth clients,
with their last use, and revocation of either (docs/remote.md)."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from fastapi import APIRouter

from ..deps import DevicesDep, PrincipalDep, acting_user

router = APIRouter(prefix="/api/v1/devices", tags=["devices"])


@router.get("", summary="The user's devices: named tokens and OAuth clients, with their last use")
def list_devices(
    devices: DevicesDep, principal: PrincipalDep, user_id: str | None = None, include_revoked: bool = False
) -> dict[str, Any]:
    owner = acting_user(principal, user_id)
    found = [asdict(device) for device in devices.list(owner, include_revoked)]
    return {"devices": found, "total": len(found)}


@router.delete("/{device_id}", summary="Revoke a device (a token or an OAuth client's grant) at once")
def revoke_device(
    device_id: str, devices: DevicesDep, principal: PrincipalDep, user_id: str | None = None
) -> dict[str, Any]:
    owner = acting_user(principal, user_id)
    device = devices.revoke(owner, device_id)
    return {**asdict(device), "status": "revoked"}
