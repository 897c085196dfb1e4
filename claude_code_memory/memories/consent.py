"""The consent queue and standing consent rules: what waits for its owner and who decided what.

With ``privacy.require_consent`` on, captured items wait as ``pending`` memories (stored
redacted, not embedded, not searchable). This module lists them for their owner, decides them
one by one or in bulk through :meth:`Writes.approve` / :meth:`States.reject`,
manages the rules that decide future captures, and reads back the decision log.

Who may do what: a pending item's text is visible only to its owner; the admin token sees
counts, rules and decisions (none of which carry text) and may decide items, which the
decision log records as ``admin``. Errors are the library's typed ones: an unknown id is
``NotFound``, and so is another user's item or rule (the same answer, so an id's existence
does not leak); an item no longer pending is ``Conflict``.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal

from sqlalchemy import Select, func, select

from ..auth.identity import Principal, acting_user, validate_user_id
from ..db.database import Database
from ..db.models import App, ConsentDecision, ConsentRule, Memory, User
from ..domain.memory_state import MemoryState
from ..errors import BadInput, Conflict, Forbidden, MemoryStackError, NotFound
from ..store.owners import Owners
from ..store.values import parse_memory_id
from .lifecycle.erasure import Erasure
from .lifecycle.states import States
from .read_model.reads import Reads
from .write.writes import Writes

log = logging.getLogger(__name__)

Effect = Literal["allow", "deny"]
EFFECTS: frozenset[str] = frozenset({"allow", "deny"})
APP_PATTERN_MAX = 128
PROJECT_PATTERN_MAX = 512
BULK_MAX = 500


@dataclass(frozen=True)
class PendingItem:
    id: str
    user_id: str
    content: str
    app: str
    project: str | None
    conversation_id: str | None
    model: str | None
    channel: str | None
    captured_at: datetime | None
    created_at: datetime
    redactions: int
    #: When the retention sweeper drops it if nobody decides (privacy.pending_expire_days).
    expires_at: datetime


@dataclass(frozen=True)
class RuleView:
    id: str
    user_id: str
    app_pattern: str
    project_pattern: str
    effect: str
    created_by: str | None
    created_at: datetime


@dataclass(frozen=True)
class DecisionView:
    id: str
    memory_id: str
    user_id: str
    decision: str
    decided_by: str
    rule_id: str | None
    edited: bool
    decided_at: datetime


@dataclass(frozen=True)
class Approval:
    id: str
    previous_id: str
    content: str
    state: str
    consent: str | None
    redactions: int


@dataclass(frozen=True)
class Outcome:
    """One id of a bulk decision: ``result`` on success, ``error`` otherwise."""

    id: str
    result: Approval | str | None = None
    error: MemoryStackError | None = None


def decider(principal: Principal) -> str:
    """How the decision log names whoever decided: ``user:<id>`` or ``admin``."""
    return "admin" if principal.is_admin else f"user:{principal.user_id}"


def glob_literal(text: str) -> str:
    """A glob that matches exactly ``text`` (``*``, ``?`` and ``[`` taken literally)."""
    return "".join(f"[{c}]" if c in "*?[" else c for c in text)


def _rule_id(value: object) -> uuid.UUID:
    try:
        return value if isinstance(value, uuid.UUID) else uuid.UUID(str(value))
    except ValueError:
        raise BadInput(f"invalid rule id {value!r}: expected a UUID") from None


class ConsentQueue:
    def __init__(
        self,
        database: Database,
        owners: Owners,
        writes: Writes,
        reads: Reads,
        states: States,
        erasure: Erasure,
        pending_expire_days: int,
    ) -> None:
        self.database = database
        self.owners = owners
        self.writes = writes
        self.reads = reads
        self.states = states
        self.erasure = erasure
        self.pending_ttl = timedelta(days=pending_expire_days)

    # -- the queue ------------------------------------------------------------------------
    def pending(
        self,
        principal: Principal,
        *,
        user_id: str | None = None,
        app: str | None = None,
        project: str | None = None,
        page: int = 1,
        size: int = 50,
    ) -> tuple[list[PendingItem], int]:
        """The owner's pending items, newest first, and how many there are in all."""
        if principal.is_admin:
            raise Forbidden(
                "pending items are visible only to their owner; use a user token "
                "(the admin token may read GET /api/v1/consent/pending/count)"
            )
        owner = acting_user(principal, user_id)
        query = self._pending_query().where(User.user_id == owner)
        if app is not None:
            query = query.where(App.name == app)
        if project is not None:
            query = query.where(Memory.project == project)
        with self.database.session() as session:
            total = session.scalar(select(func.count()).select_from(query.subquery())) or 0
            rows = session.execute(
                query.order_by(Memory.created_at.desc(), Memory.id).offset((page - 1) * size).limit(size)
            )
            return [self._item(memory, app_name, uid) for memory, app_name, uid in rows], total

    def pending_count(self, principal: Principal, user_id: str | None = None) -> dict[str, Any]:
        """Counts only, no text: the owner's, or for the admin any user's or everyone's."""
        if user_id is not None:
            validate_user_id(user_id)
            principal.require_user(user_id)
        elif not principal.is_admin:
            user_id = principal.user_id
        query = (
            select(User.user_id, App.name, func.count(Memory.id))
            .join(App, Memory.app_id == App.id)
            .join(User, Memory.user_id == User.id)
            .where(Memory.state == MemoryState.pending)
            .group_by(User.user_id, App.name)
        )
        if user_id is not None:
            query = query.where(User.user_id == user_id)
        by_app: dict[str, int] = {}
        by_user: dict[str, int] = {}
        with self.database.session() as session:
            for uid, app_name, count in session.execute(query):
                by_app[app_name] = by_app.get(app_name, 0) + count
                by_user[uid] = by_user.get(uid, 0) + count
        body: dict[str, Any] = {"user_id": user_id, "total": sum(by_user.values()), "by_app": by_app}
        if user_id is None:
            body["by_user"] = by_user
        return body

    # -- decisions ------------------------------------------------------------------------
    def approve(self, principal: Principal, memory_id: object, text: str | None = None) -> Approval:
        """Approve a pending item (with ``text``: edit, then approve; the edit is gated again)."""
        mid = parse_memory_id(memory_id)
        owner = self._owner(principal, mid)
        results = self.writes.approve(mid, user_id=owner, decided_by=decider(principal), text=text)
        added = next((r for r in results if r.get("event") == "ADD"), None)
        if added is None:
            raise Conflict(f"approving {mid} stored nothing")
        memory = self.reads.get(added["id"], owner)
        return Approval(
            id=str(memory.id),
            previous_id=str(mid),
            content=memory.content,
            state=memory.state.value,
            consent=memory.consent,
            redactions=memory.redactions or 0,
        )

    def reject(self, principal: Principal, memory_id: object, *, erase: bool = True) -> str:
        """Reject a pending item: its text is deleted for good. Returns its id."""
        mid = parse_memory_id(memory_id)
        owner = self._owner(principal, mid)
        self.states.reject(mid, user_id=owner, decided_by=decider(principal), erase=erase)
        return str(mid)

    def approve_many(self, principal: Principal, ids: list[str]) -> list[Outcome]:
        return self._each(ids, lambda mid: self.approve(principal, mid))

    def reject_many(self, principal: Principal, ids: list[str]) -> list[Outcome]:
        outcomes = self._each(ids, lambda mid: self.reject(principal, mid, erase=False))
        if any(outcome.error is None for outcome in outcomes):
            self.erasure.erase()  # once for the batch, as a delete request does
        return outcomes

    @staticmethod
    def _each(ids: list[str], decide: Callable[[str], Approval | str]) -> list[Outcome]:
        """Decide every id on its own: one failure is reported and does not stop the rest."""
        if not ids:
            raise BadInput("ids must name at least one pending item")
        if len(ids) > BULK_MAX:
            raise BadInput(f"at most {BULK_MAX} ids per request; got {len(ids)}")
        outcomes = []
        for given in ids:
            try:
                outcomes.append(Outcome(id=given, result=decide(given)))
            except MemoryStackError as exc:
                outcomes.append(Outcome(id=given, error=exc))
            except Exception:  # noqa: BLE001 - one broken item must not abort the others
                log.exception("deciding consent item %s failed", given)
                outcomes.append(
                    Outcome(
                        id=given, error=MemoryStackError("internal error; the server log has the details")
                    )
                )
        return outcomes

    def decisions(
        self, principal: Principal, *, user_id: str | None = None, page: int = 1, size: int = 50
    ) -> tuple[list[DecisionView], int]:
        """The decision log, newest first: the owner's, or for the admin anyone's."""
        owner = self._owner_filter(principal, user_id)
        query = select(ConsentDecision, User.user_id).join(User, ConsentDecision.user_id == User.id)
        if owner is not None:
            query = query.where(User.user_id == owner)
        with self.database.session() as session:
            total = session.scalar(select(func.count()).select_from(query.subquery())) or 0
            rows = session.execute(
                query.order_by(ConsentDecision.decided_at.desc(), ConsentDecision.id)
                .offset((page - 1) * size)
                .limit(size)
            )
            return [
                DecisionView(
                    id=str(d.id),
                    memory_id=str(d.memory_id),
                    user_id=uid,
                    decision=d.decision,
                    decided_by=d.decided_by,
                    rule_id=str(d.rule_id) if d.rule_id else None,
                    edited=bool(d.edited),
                    decided_at=d.decided_at,
                )
                for d, uid in rows
            ], total

    # -- rules ----------------------------------------------------------------------------
    def rules(self, principal: Principal, user_id: str | None = None) -> list[RuleView]:
        """Standing rules in the order they are checked: deny rules first, then oldest first."""
        owner = self._owner_filter(principal, user_id)
        query = select(ConsentRule, User.user_id).join(User, ConsentRule.user_id == User.id)
        if owner is not None:
            query = query.where(User.user_id == owner)
        with self.database.session() as session:
            rows = list(session.execute(query.order_by(ConsentRule.created_at, ConsentRule.id)))
        rows.sort(key=lambda row: row[0].effect != "deny")
        return [self._rule(rule, uid) for rule, uid in rows]

    def add_rule(
        self,
        principal: Principal,
        *,
        effect: str,
        user_id: str | None = None,
        app_pattern: str | None = None,
        project_pattern: str | None = None,
        from_item: object = None,
    ) -> tuple[RuleView, bool]:
        """Add a rule (or find the identical one). ``from_item`` fills the patterns left out
        with that memory's app and project, matched literally. Returns (rule, created)."""
        if effect not in EFFECTS:
            raise BadInput(f"invalid effect {effect!r}: use 'allow' or 'deny'")
        if from_item is not None:
            mid = parse_memory_id(from_item)
            owner = self._owner(principal, mid)
            if user_id is not None and user_id != owner:
                raise BadInput(f"item {mid} belongs to another user than {user_id!r}")
            with self.database.session() as session:
                memory = session.get(Memory, mid)
                if memory is None or memory.state == MemoryState.deleted:
                    raise NotFound(f"memory {mid} not found")
                if app_pattern is None:
                    app_pattern = glob_literal(memory.app.name)
                if project_pattern is None:
                    # An item without a project gives "" : only captures without a project match.
                    project_pattern = glob_literal(memory.project or "")
        else:
            owner = acting_user(principal, user_id)
        app_pattern = "*" if app_pattern is None else app_pattern
        project_pattern = "*" if project_pattern is None else project_pattern
        if not app_pattern.strip() or len(app_pattern) > APP_PATTERN_MAX:
            raise BadInput(f"invalid app_pattern {app_pattern!r}: 1-{APP_PATTERN_MAX} characters")
        if len(project_pattern) > PROJECT_PATTERN_MAX:
            raise BadInput(f"project_pattern is longer than {PROJECT_PATTERN_MAX} characters")
        with self.database.session() as session:
            user = self.owners.user(session, owner)
            same = session.scalar(
                select(ConsentRule).where(
                    ConsentRule.user_id == user.id,
                    ConsentRule.app_pattern == app_pattern,
                    ConsentRule.project_pattern == project_pattern,
                    ConsentRule.effect == effect,
                )
            )
            if same is not None:
                return self._rule(same, owner), False
            rule = ConsentRule(
                user_id=user.id,
                app_pattern=app_pattern,
                project_pattern=project_pattern,
                effect=effect,
                created_by=decider(principal),
            )
            session.add(rule)
            session.flush()
            return self._rule(rule, owner), True

    def remove_rule(self, principal: Principal, rule_id: object) -> str:
        rid = _rule_id(rule_id)
        with self.database.session() as session:
            row = session.execute(
                select(ConsentRule, User.user_id)
                .join(User, ConsentRule.user_id == User.id)
                .where(ConsentRule.id == rid)
            ).first()
            if row is None or not (principal.is_admin or row[1] == principal.user_id):
                raise NotFound(f"consent rule {rid} not found")
            rule = row[0]
            session.delete(rule)
        return str(rid)

    # -- helpers --------------------------------------------------------------------------
    @staticmethod
    def _owner_filter(principal: Principal, user_id: str | None) -> str | None:
        """Whose rows to read: a user token reads its own; the admin anyone's (None: all)."""
        if user_id is not None:
            validate_user_id(user_id)
            principal.require_user(user_id)
            return user_id
        return None if principal.is_admin else principal.user_id

    def _owner(self, principal: Principal, memory_id: uuid.UUID) -> str:
        """The owner of ``memory_id``: 404 when unknown or not the caller's (one answer)."""
        with self.database.session() as session:
            owner = session.scalar(
                select(User.user_id).join(Memory, Memory.user_id == User.id).where(Memory.id == memory_id)
            )
        if owner is None or not (principal.is_admin or owner == principal.user_id):
            raise NotFound(f"memory {memory_id} not found")
        return owner

    @staticmethod
    def _pending_query() -> Select[Memory, str, str]:
        return (
            select(Memory, App.name, User.user_id)
            .join(App, Memory.app_id == App.id)
            .join(User, Memory.user_id == User.id)
            .where(Memory.state == MemoryState.pending)
        )

    def _item(self, memory: Memory, app_name: str, user_id: str) -> PendingItem:
        expires = memory.created_at + self.pending_ttl
        if memory.expires_at is not None:
            expires = min(expires, memory.expires_at)
        return PendingItem(
            id=str(memory.id),
            user_id=user_id,
            content=memory.content,
            app=app_name,
            project=memory.project,
            conversation_id=memory.conversation_id,
            model=memory.model,
            channel=memory.channel,
            captured_at=memory.captured_at,
            created_at=memory.created_at,
            redactions=memory.redactions or 0,
            expires_at=expires,
        )

    @staticmethod
    def _rule(rule: ConsentRule, user_id: str) -> RuleView:
        return RuleView(
            id=str(rule.id),
            user_id=user_id,
            app_pattern=rule.app_pattern,
            project_pattern=rule.project_pattern,
            effect=rule.effect,
            created_by=rule.created_by,
            created_at=rule.created_at,
        )
