"""Maintenance for the admin token: operations that span every user's memories.

    POST /api/v1/admin/reconcile      bring SQL and the vector store back into step now

The server runs a reconciliation at every start (memories/lifecycle/reconcile.py); ``/health`` reports
the last one. This runs one on demand and answers with its report when it is done.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from ...errors import Forbidden
from ..deps import PrincipalDep, ReconcilerDep

router = APIRouter(prefix="/api/v1/admin", tags=["admin"])


@router.post("/reconcile", summary="Reconcile the metadata database and the vector store now (admin token)")
def reconcile(reconciler: ReconcilerDep, principal: PrincipalDep) -> dict[str, Any]:
    """Removes vector points without a live memory and restores the vectors of memories that
    lost theirs; answers with the counts. A pass already running is waited for first."""
    if not principal.is_admin:
        raise Forbidden("reconciliation spans every user's memories: it needs the admin token")
    return reconciler.run("admin").to_dict()
