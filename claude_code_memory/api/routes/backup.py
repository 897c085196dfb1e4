"""Backup (`/api/v1/backup`): export a user's memories as a zip, import such a zip.

The archive and how an import differs from OpenMemory's are described in
:mod:`claude_code_memory.memories.portability.backup`.
"""

from __future__ import annotations

import io
from typing import Annotated, Any

from fastapi import APIRouter, Body, File, Form, Query, UploadFile
from fastapi.responses import Response
from pydantic import BaseModel, ConfigDict, Field

from ...errors import BadInput, TooLarge
from ..deps import PrincipalDep, ServiceDep, SettingsDep, acting_user

router = APIRouter(prefix="/api/v1/backup", tags=["backup"])

#: An import may upload this many times the ordinary body cap (the app's BodyLimit agrees).
IMPORT_SIZE_FACTOR = 50
MAX_EPOCH = 253_402_300_799  # 9999-12-31T23:59:59Z


class ExportRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    user_id: str | None = Field(
        None, description="Defaults to the token's user; the admin token must name one"
    )
    app_id: str | None = Field(None, description="Only this app's memories")
    from_date: int | None = Field(None, ge=0, le=MAX_EPOCH, description="Created at or after (epoch seconds)")
    to_date: int | None = Field(None, ge=0, le=MAX_EPOCH, description="Created at or before (epoch seconds)")
    include_vectors: bool = Field(True, description="Accepted for compatibility; imports re-embed")


@router.post("/export")
def export_backup(
    principal: PrincipalDep,
    service: ServiceDep,
    request: Annotated[ExportRequest | None, Body()] = None,
) -> Response:
    """A zip of one user's memories: ``memories.json`` and ``memories.jsonl.gz``."""
    request = request or ExportRequest()
    user_id = acting_user(principal, request.user_id)
    archive = service.backup.export_archive(
        user_id, app_id=request.app_id, from_date=request.from_date, to_date=request.to_date
    )
    return Response(
        archive,
        media_type="application/zip",
        headers={"Content-Disposition": f'attachment; filename="memories_export_{user_id}.zip"'},
    )


@router.post("/import")
def import_backup(
    settings: SettingsDep,
    principal: PrincipalDep,
    service: ServiceDep,
    file: UploadFile = File(..., description="A zip with memories.json and memories.jsonl.gz"),
    user_id: str | None = Form(None, description="Import into this user; defaults to the token's user"),
    mode: str = Query(
        "overwrite", description="skip: keep memories the user already has; overwrite: replace"
    ),
) -> dict[str, Any]:
    """Restore an export into a user; every memory is embedded and categorised like a new write."""
    if mode not in ("skip", "overwrite"):
        raise BadInput(f"invalid mode {mode!r}: use 'skip' or 'overwrite'")
    target = acting_user(principal, user_id)
    max_bytes = settings.server.max_body_bytes * IMPORT_SIZE_FACTOR
    upload = file.file
    upload.seek(0, io.SEEK_END)
    size = upload.tell()
    if size > max_bytes:
        raise TooLarge(f"the upload is {size} bytes; the limit is {max_bytes}")
    upload.seek(0)
    counts = service.backup.import_archive(
        target,
        upload.read(),
        mode=mode,
        changed_by=principal.user_id or target,
        max_bytes=max_bytes,
    )
    return {
        "message": f'Import completed into user "{target}"',
        "imported": counts.imported,
        "skipped": counts.skipped,
        "overwritten": counts.overwritten,
    }
