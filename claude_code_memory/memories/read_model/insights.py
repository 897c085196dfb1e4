"""Dashboard figures and hygiene for one user, computed in the database: totals by state, app
and project, memories per day, the pending count, and hygiene.

The Claude Code hooks' work is two counts: memories injected into sessions (access-log
entries of type ``injected``, one per memory per session) and turns captured at Stop (memories
the hooks wrote, pending ones included).

Hygiene is four lists a person may want to act on: exact duplicates (same normalised text
stored more than once, e.g. under different states), memories that had secrets redacted,
memories no client has ever recalled (reads by the web UI itself do not count), and memories
the retention policy will delete soon. Each comes with a count and a few examples.
"""

from __future__ import annotations

from datetime import date, datetime, timedelta
from typing import Any

from sqlalchemy import Select, func, select

from ...db.database import Database
from ...db.models import App, Memory, MemoryAccessLog, utcnow
from ...domain.memory_state import MemoryState
from ...store.access_log import RECALLS, AccessLog
from ...store.owners import Owners
from ..recall.context import HOOK_APP, INJECTED
from ..recall.hook_events import CAPTURE_SOURCE
from .shapes import iso

#: The app name the web UI reads through; its searches are not "recall" by a client.
UI_APP = "ui"
KEPT_STATES = (MemoryState.active, MemoryState.paused, MemoryState.archived)
EXAMPLES = 5
SNIPPET = 160


def _example(memory: Memory, **extra: Any) -> dict[str, Any]:
    text = memory.content if len(memory.content) <= SNIPPET else memory.content[: SNIPPET - 1] + "…"
    return {"id": str(memory.id), "content": text, "state": memory.state.value, **extra}


def _day(value: Any) -> date:
    if isinstance(value, datetime):
        return value.date()
    if isinstance(value, date):
        return value
    return date.fromisoformat(str(value)[:10])


def _hooks(session: Any, user_pk: Any) -> dict[str, int]:
    injections = session.scalar(
        select(func.count())
        .select_from(MemoryAccessLog)
        .join(Memory, Memory.id == MemoryAccessLog.memory_id)
        .where(Memory.user_id == user_pk, MemoryAccessLog.access_type == INJECTED)
    )
    captures = session.scalar(
        select(func.count())
        .select_from(Memory)
        .join(App, Memory.app_id == App.id)
        .where(
            Memory.user_id == user_pk,
            Memory.state != MemoryState.deleted,
            App.name == HOOK_APP,
            Memory.metadata_["source"].as_string() == CAPTURE_SOURCE,
        )
    )
    return {"injections": int(injections or 0), "captures": int(captures or 0)}


def _examples(session: Any, query: Select[Any], **extra: Any) -> list[dict[str, Any]]:
    return [_example(m, **extra) for m in session.scalars(query.limit(EXAMPLES))]


def _duplicates(session: Any, user_pk: Any) -> dict[str, Any]:
    # Grouped in the index of (user, hash) alone (0.37 s at 1M), then the groups' memories in
    # the kept states; grouping the kept rows read each row for its state (3 s at 1M). That
    # index is unique since migration 0005, so a store that enforces it has no group here.
    groups = (
        select(Memory.content_hash)
        .where(Memory.user_id == user_pk, Memory.content_hash.is_not(None))
        .group_by(Memory.content_hash)
        .having(func.count() > 1)
    )
    hashes = list(session.scalars(groups))
    if not hashes:
        return {"groups": 0, "memories": 0, "examples": []}
    in_groups = select(Memory).where(
        Memory.user_id == user_pk, Memory.state.in_(KEPT_STATES), Memory.content_hash.in_(hashes)
    )
    count = session.scalar(select(func.count()).select_from(in_groups.subquery())) or 0
    examples = _examples(session, in_groups.order_by(Memory.content_hash, Memory.created_at))
    return {"groups": len(hashes), "memories": int(count), "examples": examples}


def _redacted(session: Any, user_pk: Any) -> dict[str, Any]:
    where = (Memory.user_id == user_pk, Memory.state != MemoryState.deleted, Memory.redactions > 0)
    count, total = session.execute(
        select(func.count(), func.coalesce(func.sum(Memory.redactions), 0)).where(*where)
    ).one()
    examples = _examples(session, select(Memory).where(*where).order_by(Memory.created_at.desc()))
    return {"memories": int(count), "redactions": int(total), "examples": examples}


#: Reads that recall a memory: a search that returned it, a hook that injected it. A listing
#: (every memory, read or not) or a fetch by id is not recall: it counted every memory recalled.
RECALL_ACCESS_TYPES = RECALLS


def _never_recalled(session: Any, user_pk: Any) -> dict[str, Any]:
    recalled = (
        select(MemoryAccessLog.memory_id)
        .join(App, MemoryAccessLog.app_id == App.id)
        .where(App.name != UI_APP, MemoryAccessLog.access_type.in_(RECALL_ACCESS_TYPES))
    )
    query = select(Memory).where(
        Memory.user_id == user_pk, Memory.state == MemoryState.active, Memory.id.not_in(recalled)
    )
    count = session.scalar(select(func.count()).select_from(query.subquery())) or 0
    return {"memories": int(count), "examples": _examples(session, query.order_by(Memory.created_at))}


def _expiring(session: Any, user_pk: Any, now: datetime, within_days: int) -> dict[str, Any]:
    query = select(Memory).where(
        Memory.user_id == user_pk,
        Memory.state != MemoryState.deleted,
        Memory.expires_at.is_not(None),
        Memory.expires_at <= now + timedelta(days=within_days),
    )
    count = session.scalar(select(func.count()).select_from(query.subquery())) or 0
    examples = [
        _example(m, expires_at=iso(m.expires_at))
        for m in session.scalars(query.order_by(Memory.expires_at).limit(EXAMPLES))
    ]
    return {"memories": int(count), "within_days": within_days, "examples": examples}


class Insights:
    """What the web UI's insights page shows of one user's memories."""

    def __init__(self, database: Database, owners: Owners, access_log: AccessLog) -> None:
        self.database = database
        self.owners = owners
        self.access_log = access_log

    def report(self, user_id: str, days: int, expiring_within_days: int) -> dict[str, Any]:
        """The dashboard for ``user_id``; the memories-per-day series covers the last ``days`` days."""
        now = utcnow()
        self.access_log.flush()
        with self.database.session() as session:
            user = self.owners.find_user(session, user_id)
            mine = Memory.user_id == user.id
            kept = (mine, Memory.state.in_(KEPT_STATES))

            by_state = {state.value: 0 for state in MemoryState if state != MemoryState.deleted}
            for state, count in session.execute(
                select(Memory.state, func.count())
                .where(mine, Memory.state != MemoryState.deleted)
                .group_by(Memory.state)
            ):
                by_state[MemoryState(state).value] = int(count)

            by_app = [
                {"app": name, "app_id": str(app_id), "is_active": bool(active), "count": int(count)}
                for app_id, name, active, count in session.execute(
                    select(App.id, App.name, App.is_active, func.count(Memory.id))
                    .outerjoin(Memory, (Memory.app_id == App.id) & Memory.state.in_(KEPT_STATES))
                    .where(App.owner_id == user.id)
                    .group_by(App.id, App.name, App.is_active)
                    .order_by(func.count(Memory.id).desc(), App.name)
                )
            ]
            by_project = [
                {"project": project, "count": int(count)}
                for project, count in session.execute(
                    select(Memory.project, func.count())
                    .where(*kept)
                    .group_by(Memory.project)
                    .order_by(func.count().desc(), Memory.project)
                )
            ]

            start = (now - timedelta(days=days - 1)).date()
            per_day: dict[date, int] = {}
            for created_day, count in session.execute(
                select(func.date(Memory.created_at), func.count())
                .where(*kept, Memory.created_at >= datetime.combine(start, datetime.min.time()))
                .group_by(func.date(Memory.created_at))
            ):
                per_day[_day(created_day)] = per_day.get(_day(created_day), 0) + int(count)
            over_time = [
                {
                    "date": (start + timedelta(days=i)).isoformat(),
                    "count": per_day.get(start + timedelta(days=i), 0),
                }
                for i in range(days)
            ]

            hygiene = {
                "duplicates": _duplicates(session, user.id),
                "redacted": _redacted(session, user.id),
                "never_recalled": _never_recalled(session, user.id),
                "expiring_soon": _expiring(session, user.id, now, expiring_within_days),
            }
            hooks = _hooks(session, user.id)
        return {
            "user_id": user_id,
            "total": sum(by_state[s.value] for s in KEPT_STATES),
            "by_state": by_state,
            "by_app": by_app,
            "by_project": by_project,
            "over_time": over_time,
            "pending": by_state[MemoryState.pending.value],
            "hygiene": hygiene,
            "hooks": hooks,
            "generated_at": iso(now),
        }
