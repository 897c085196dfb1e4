"""Links between memories from a memory's page: link it to another (a typed relation) and
remove a link. The links themselves are shown on the memory's page (memories.py)."""

from __future__ import annotations

import re
from typing import Annotated

from fastapi import APIRouter, Form, Request
from fastapi.responses import Response

from .api import ApiError
from .web import CheckedDep, redirect, refused, ui_of

router = APIRouter()

#: Relations offered as suggestions; any 1-64 lower-case characters are accepted by the API.
RELATIONS = ("related", "depends on", "supersedes", "part of", "contradicts", "see also")
_UUID = re.compile(r"[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}")


def memory_id_from(text: str | None) -> str | None:
    """The memory id in what a person pasted: the id itself or a memory page's address."""
    found = _UUID.findall(text or "")
    return found[-1].lower() if found else None


@router.post("/memories/{memory_id}/links")
def link(
    request: Request,
    session: CheckedDep,
    memory_id: str,
    target: Annotated[str, Form()],
    relation: Annotated[str, Form()] = "related",
) -> Response:
    back = f"/memories/{memory_id}"
    target_id = memory_id_from(target)
    if target_id is None:
        return redirect(
            back,
            request,
            "Name the other memory by its id or its page's address; nothing was linked.",
            "error",
        )
    try:
        result = ui_of(request).api.post(
            f"/api/v1/memories/{memory_id}/links",
            session.token,
            json={"target_id": target_id, "relation": relation.strip().lower() or "related"},
        )
    except ApiError as exc:  # an unknown memory, itself, a relation the API refuses
        return refused(request, back, exc)
    if not result.get("created", True):
        return redirect(back, request, f"These memories were already linked ({result['relation']}).")
    return redirect(back, request, f"Linked ({result['relation']}).")


@router.post("/memories/{memory_id}/links/{link_id}/delete")
def unlink(request: Request, session: CheckedDep, memory_id: str, link_id: str) -> Response:
    try:
        ui_of(request).api.delete(f"/api/v1/links/{link_id}", session.token)
    except ApiError as exc:
        return refused(request, f"/memories/{memory_id}", exc)
    return redirect(f"/memories/{memory_id}", request, "The link was removed.")
