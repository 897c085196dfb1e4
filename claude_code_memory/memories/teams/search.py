"""Search over the user's own memories and their teams': personal first, each team hit labelled.

:func:`merge` is the rule (pure): the personal hits in their order, then the teams' hits by
score, the teams keeping up to ``teams.search_slots`` of the ``limit`` when they match.
:class:`TeamSearch` runs one search for the user and one per team (each over the team's own
user, so the store's filters keep every other memory out), reading membership anew each time.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime

from sqlalchemy import or_, select

from ...db.database import Database
from ...db.models import Memory, TeamAudit, utcnow
from ...domain.memory_state import MemoryState
from ...search.pipeline import Search
from ...search.request import SearchRequest
from ...search.shaping import Hit
from .membership import TEAM_APP, Membership, Teams


def merge(personal: Sequence[Hit], shared: Sequence[Hit], limit: int, slots: int) -> list[Hit]:
    """Personal hits first, then team hits (best score first); team hits get at least
    ``min(slots, limit)`` places when there are that many, more when personal hits are few."""
    ordered = sorted(shared, key=lambda hit: -hit.score)
    kept_for_teams = min(len(ordered), slots, limit)
    own = list(personal[: limit - kept_for_teams])
    return own + ordered[: limit - len(own)]


class TeamSearch:
    def __init__(self, database: Database, teams: Teams, pipeline: Search, slots: int) -> None:
        self.database = database
        self.teams = teams
        self.pipeline = pipeline
        self.slots = slots

    def search(self, request: SearchRequest) -> list[Hit]:
        """The pipeline's search (:meth:`Search.search`) over the user's memories and their
        teams'. ``request.teams_only``: the teams' alone (the ``team`` scope). A search through
        one app of the user (``app_filter``) stays personal."""
        if request.app_filter is not None:
            return self.pipeline.search(request)
        # The teams are read beside the personal search (which does not need them), on one of
        # the search's threads: read first, they were a serial step of every search.
        reader = request.reader
        reading = self.pipeline.beside(self.teams.memberships, request.user_id, reader[0] if reader else None)
        personal = self.pipeline.search(request)
        memberships = reading.result()
        if not memberships:
            return personal
        shared: list[Hit] = []
        for membership in memberships:
            shared += self.team_hits(membership, request)
        limit = request.limit
        hits = merge(personal, shared, limit, limit if request.teams_only else self.slots)
        self.record_reads(request.user_id, memberships, hits, request.access_type)
        return hits

    def team_hits(self, membership: Membership, request: SearchRequest) -> list[Hit]:
        """The search over one team's memories: those of the team's own user, read through the
        team's app."""
        team_request = replace(
            request, user_id=membership.owner_user_id, app_name=TEAM_APP, reader=None, teams_only=False
        )
        return [replace(hit, team=membership.name) for hit in self.pipeline.search(team_request)]

    def recent(self, user_id: str, project: str | None, limit: int) -> list[tuple[str, str, datetime, str]]:
        """The newest memories of the user's teams for a SessionStart briefing: the project's and
        those of no project, at most ``limit`` (id, text, when, team), each read audited."""
        memberships = self.teams.memberships(user_id)
        if not memberships or limit <= 0:
            return []
        by_owner = {membership.owner_pk: membership for membership in memberships}
        scope = (
            or_(Memory.project == project, Memory.project.is_(None)) if project else Memory.project.is_(None)
        )
        with self.database.session() as session:
            rows = session.execute(
                select(Memory.id, Memory.content, Memory.captured_at, Memory.created_at, Memory.user_id)
                .where(Memory.user_id.in_(list(by_owner)), Memory.state == MemoryState.active, scope)
                .order_by(Memory.created_at.desc())
                .limit(limit)
            ).all()
        self.teams.audit_later(
            [
                TeamAudit(
                    id=uuid.uuid4(),
                    team_id=by_owner[row.user_id].team_id,
                    actor=user_id,
                    action="read",
                    memory_id=row.id,
                    detail="briefing",
                    at=utcnow(),
                )
                for row in rows
            ]
        )
        return [
            (str(row.id), row.content, row.captured_at or row.created_at, by_owner[row.user_id].name)
            for row in rows
        ]

    def record_reads(
        self, user_id: str, memberships: Sequence[Membership], hits: Sequence[Hit], how: str
    ) -> None:
        """One audit row per team memory the user was given."""
        team_ids = {membership.name: membership.team_id for membership in memberships}
        rows = [
            TeamAudit(
                id=uuid.uuid4(),
                team_id=team_ids[hit.team],
                actor=user_id,
                action="read",
                memory_id=hit.memory.id,
                detail=how,
            )
            for hit in hits
            if hit.team is not None
        ]
        self.teams.audit_later(rows)
