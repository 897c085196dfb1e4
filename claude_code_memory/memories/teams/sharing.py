"""Sharing a memory into a team, listing and removing a team's memories, the team quota.

A memory enters a team only here: a member's explicit share of one of their own active
memories. The copy is a new write by the team's own user through the policy gate (channel
``team``), so it is redacted again, personal data masked (``teams.mask_pii``) whatever rule the
personal memory was stored under. A memory waiting for consent cannot be shared.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sqlalchemy import delete, func, select

from ...config import TeamsSettings
from ...db.database import Database
from ...db.models import App, Memory, Team, TeamAudit, TeamInvitation, TeamMember
from ...domain.memory_state import MemoryState
from ...errors import BadInput, Conflict, Forbidden, NotFound, TooLarge
from ...store.owners import owned
from ...store.values import iso, parse_memory_id
from ..lifecycle.states import States
from ..write.writes import Writes
from .membership import TEAM_APP, WRITERS, Membership, Teams, audit

MAX_SHARE = 100


class TeamMemories:
    def __init__(
        self, database: Database, teams: Teams, writes: Writes, states: States, settings: TeamsSettings
    ) -> None:
        self.database = database
        self.teams = teams
        self.writes = writes
        self.states = states
        self.settings = settings

    def share(self, user_id: str, name: str, memory_ids: Iterable[object]) -> list[dict[str, Any]]:
        """Copy the user's memories into the team; one result per memory, in order."""
        membership = self.teams.membership(user_id, name)
        membership.require(WRITERS, "share memories")
        ids = [parse_memory_id(memory_id) for memory_id in memory_ids]
        if not 1 <= len(ids) <= MAX_SHARE:
            raise BadInput(f"memory_ids must list 1 to {MAX_SHARE} memory ids")
        # The count and the writes it allows are one step: two shares at once (two threads,
        # two replicas) could each see room for one more and both write.
        with self.database.exclusive(f"team-quota:{membership.team_id}"):
            with self.database.session() as session:
                sources = [owned(session, memory_id, user_id) for memory_id in ids]
                for source in sources:
                    if source.state == MemoryState.pending:
                        raise Conflict(
                            f"memory {source.id} is waiting for your consent: approve it first "
                            "(consent stays personal)"
                        )
                    if source.state != MemoryState.active:
                        raise BadInput(
                            f"memory {source.id} is {source.state.value}: only active memories can be shared"
                        )
                texts = [(s.id, s.content, s.project, s.task) for s in sources]
                held = self._held(session, membership)
            if held + len(texts) > self.settings.max_memories:
                raise TooLarge(
                    f"team {membership.name!r} holds {held} memories; sharing {len(texts)} more would pass "
                    f"its quota of {self.settings.max_memories} (teams.max_memories): remove some first"
                )
            results = []
            for source_id, text, project, task in texts:
                written = self.writes.write_memory(
                    user_id=membership.owner_user_id,
                    app_name=TEAM_APP,
                    text=text,
                    channel="team",
                    project=project,
                    task=task,
                    metadata={"shared_by": user_id, "shared_from": str(source_id)},
                    mask_pii=self.settings.mask_pii,
                )
                result = written.results[0]
                copy_id = result.get("id")
                with self.database.session() as session:
                    audit(session, membership.team_id, user_id, "share", copy_id, detail=f"from {source_id}")
                results.append(
                    {
                        "source_id": str(source_id),
                        "id": copy_id,
                        "event": result.get("event"),
                        "memory": result.get("memory"),
                    }
                )
            return results

    def _held(self, session: Any, membership: Membership) -> int:
        return int(
            session.scalar(
                select(func.count())
                .select_from(Memory)
                .where(
                    Memory.user_id == membership.owner_pk,
                    Memory.state.notin_([MemoryState.deleted, MemoryState.trashed]),
                )
            )
            or 0
        )

    def memories(self, user_id: str, name: str, limit: int = 100) -> dict[str, Any]:
        """The team's active memories, newest first; each read is written to the audit log."""
        membership = self.teams.membership(user_id, name)
        if not 1 <= limit <= 1000:
            raise BadInput("limit must be from 1 to 1000")
        with self.database.session() as session:
            rows = list(
                session.execute(
                    select(Memory, App.name)
                    .join(App, App.id == Memory.app_id)
                    .where(Memory.user_id == membership.owner_pk, Memory.state == MemoryState.active)
                    .order_by(Memory.created_at.desc())
                    .limit(limit)
                )
            )
            items = [_item(memory, membership.name) for memory, _ in rows]
            for memory, _ in rows:
                audit(session, membership.team_id, user_id, "read", memory.id, detail="list")
            total = self._held(session, membership)
        return {
            "team": membership.name,
            "role": membership.role,
            "items": items,
            "total": total,
            "quota": self.settings.max_memories,
        }

    def unshare(self, user_id: str, name: str, memory_id: object) -> None:
        """Remove a memory from the team: an owner any, a member what they shared."""
        membership = self.teams.membership(user_id, name)
        membership.require(WRITERS, "remove team memories")
        mid = parse_memory_id(memory_id)
        with self.database.session() as session:
            memory = session.get(Memory, mid)
            if memory is None or memory.user_id != membership.owner_pk or memory.state == MemoryState.deleted:
                raise NotFound(f"memory {mid} not found in team {membership.name!r}")
            if membership.role != "owner" and (memory.metadata_ or {}).get("shared_by") != user_id:
                raise Forbidden("a member removes only what they shared; an owner removes any")
        self.states.delete_memories([mid], user_id=membership.owner_user_id, changed_by=user_id)
        with self.database.session() as session:
            audit(session, membership.team_id, user_id, "unshare", mid)

    def delete_team(self, user_id: str, name: str) -> dict[str, Any]:
        """Delete the team (owners): its memories for good (no trash: no one could restore them),
        then its members, invitations and audit log; its name is free again. Effective at once
        for every member (each read checks membership)."""
        membership = self.teams.membership(user_id, name)
        membership.require(("owner",), "delete the team")
        # Under the lock a share holds from its count to its writes: no copy lands after this.
        with self.database.exclusive(f"team-quota:{membership.team_id}"):
            with self.database.session() as session:
                ids = list(
                    session.scalars(
                        select(Memory.id).where(
                            Memory.user_id == membership.owner_pk, Memory.state != MemoryState.deleted
                        )
                    )
                )
            deleted = self.states.delete_memories(
                ids, user_id=membership.owner_user_id, changed_by=user_id, permanent=True
            )
            # The memories go first: should this stop in between, the team is still there, empty,
            # and deleting it again finishes. The team's own user keeps the content-less tombstones.
            with self.database.session() as session:
                for model in (TeamAudit, TeamInvitation, TeamMember):
                    session.execute(delete(model).where(model.team_id == membership.team_id))
                session.execute(delete(Team).where(Team.id == membership.team_id))
        return {"team": membership.name, "memories_deleted": deleted}


def _item(memory: Memory, team: str) -> dict[str, Any]:
    metadata = memory.metadata_ or {}
    return {
        "id": str(memory.id),
        "content": memory.content,
        "created_at": iso(memory.created_at),
        "project": memory.project,
        "task": memory.task,
        "team": team,
        "shared_by": metadata.get("shared_by"),
    }
