"""Hygiene proposals: the job that finds them, their review, applying them and undoing that.

    Hygiene(...).run(user_id=None) -> RunReport           scan (hygiene_scan.py) and store proposals
    Hygiene.proposals / get / approve / reject / undo     the owner reviews and decides
    Hygiene.rules / add_rule / remove_rule                standing rules: a kind applied unasked
    HygieneScheduler(hygiene, hours).running()            the server's schedule for run()

Applying never deletes: a merge keeps the most specific memory (the owner may edit its text)
and archives the others, recording their provenance in the kept one's metadata
(``merged_from``); a superseded memory is archived and linked both ways (``superseded_by`` /
``supersedes``); junk and stale memories are archived. Archived memories keep their ids, text
and state history, so undo (within ``hygiene.undo_days``) makes them active again and puts the
kept memory's text and metadata back. Nothing changes without the owner's approval or a
standing rule of theirs; a rejected proposal is not proposed again.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import func, select, update

from ...auth.identity import Principal, acting_user
from ...config import HygieneSettings
from ...db.database import Database
from ...db.models import HygieneProposal, HygieneRule, Memory, MemoryAccessLog, User
from ...domain.memory_state import MemoryState
from ...errors import BadInput, Conflict, Forbidden, MemoryStackError, NotFound
from ...store.access_log import AccessLog
from ...store.owners import Owners
from ...store.values import iso
from ...store.vectors import Vectors
from ..consent import BULK_MAX, decider
from ..lifecycle.periodic import Periodic
from ..lifecycle.states import States
from ..write.capture_filter import CaptureFilter
from ..write.writes import Writes
from .scan import KINDS, Finding, Item, Thresholds, scan

log = logging.getLogger(__name__)

STATUSES = ("open", "applied", "rejected", "undone", "void")
#: The scheduler's first run waits this long (or the interval, if shorter): start-up first.
FIRST_RUN_DELAY_SECONDS = 60.0


def signature(kind: str, ids: list[str]) -> str:
    return hashlib.sha256(f"{kind}:{','.join(sorted(ids))}".encode()).hexdigest()


def _uuid(value: object, what: str = "proposal id") -> uuid.UUID:
    try:
        return value if isinstance(value, uuid.UUID) else uuid.UUID(str(value))
    except ValueError:
        raise BadInput(f"invalid {what} {value!r}: expected a UUID") from None


@dataclass
class RunReport:
    users: int = 0
    memories: int = 0
    proposed: dict[str, int] = field(default_factory=lambda: dict.fromkeys(KINDS, 0))
    auto_applied: int = 0
    seconds: float = 0.0
    finished_at: datetime | None = None
    #: Where the time went: load (SQL), vectors (stored ones read; missing ones embedded),
    #: neighbours, rules, write (proposals stored), apply (standing rules).
    step_seconds: dict[str, float] = field(default_factory=dict)
    #: Memories whose stored vector was missing, embedded again.
    embedded: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "users": self.users,
            "memories": self.memories,
            "proposed": dict(self.proposed),
            "auto_applied": self.auto_applied,
            "seconds": round(self.seconds, 3),
            "step_seconds": {step: round(value, 3) for step, value in self.step_seconds.items()},
            "embedded": self.embedded,
            "finished_at": iso(self.finished_at),
        }


class Hygiene:
    def __init__(
        self,
        database: Database,
        settings: HygieneSettings,
        *,
        owners: Owners,
        vectors: Vectors,
        writes: Writes,
        states: States,
        access_log: AccessLog,
        capture_filter: CaptureFilter,
        clock: Callable[[], datetime],
    ) -> None:
        self.database = database
        self.settings = settings
        self.owners = owners
        self.vectors = vectors
        self.writes = writes
        self.states = states
        self.access_log = access_log
        self.capture_filter = capture_filter
        self.clock = clock
        self.thresholds = Thresholds(
            duplicate_similarity=self.settings.duplicate_similarity,
            supersede_similarity=self.settings.supersede_similarity,
            stale_days=self.settings.stale_days,
        )
        self.next_run_at: datetime | None = None
        self.last_run: RunReport | None = None
        self._lock = threading.Lock()

    # -- the job --------------------------------------------------------------------------
    def run(self, user_id: str | None = None) -> RunReport:
        """Scan every user's active memories (or one user's) and store new proposals; kinds a
        user has a standing rule for are applied at once."""
        with self._lock:
            started = time.perf_counter()
            report = RunReport()
            self.access_log.flush()  # queued reads count as recalls
            with self.database.session() as session:
                query = select(User.user_id)
                if user_id is not None:
                    query = query.where(User.user_id == user_id)
                users = list(session.scalars(query))
            for uid in users:
                report.users += 1
                self._run_user(uid, report)
            report.seconds = time.perf_counter() - started
            report.finished_at = self.clock()
            self.last_run = report
            if sum(report.proposed.values()):
                log.info("hygiene run: %s", report.to_dict())
            return report

    def _run_user(self, user_id: str, report: RunReport) -> None:
        now = self.clock()
        steps = report.step_seconds
        mark = time.perf_counter()

        def lap(step: str) -> None:
            nonlocal mark
            now_ = time.perf_counter()
            steps[step] = steps.get(step, 0.0) + now_ - mark
            mark = now_

        with self.database.session() as session:
            user = session.scalar(select(User).where(User.user_id == user_id))
            if user is None:
                return
            user_pk = user.id
            last_read = (
                select(MemoryAccessLog.memory_id, func.max(MemoryAccessLog.accessed_at).label("last"))
                .group_by(MemoryAccessLog.memory_id)
                .subquery()
            )
            rows = session.execute(
                select(Memory.id, Memory.content, Memory.created_at, last_read.c.last)
                .outerjoin(last_read, last_read.c.memory_id == Memory.id)
                # A memory-tool file is the model's own notebook: its structure is not ours to merge.
                .where(Memory.user_id == user_pk, Memory.state == MemoryState.active, Memory.path.is_(None))
                # The newest only: neighbours compare every pair (hygiene.max_memories).
                .order_by(Memory.created_at.desc())
                .limit(self.settings.max_memories)
            ).all()[::-1]
            known = set(
                session.scalars(select(HygieneProposal.signature).where(HygieneProposal.user_id == user_pk))
            )
            busy = {
                mid
                for ids in session.scalars(
                    select(HygieneProposal.memory_ids).where(
                        HygieneProposal.user_id == user_pk, HygieneProposal.status == "open"
                    )
                )
                for mid in ids
            }
            standing = {
                rule.kind: rule.id
                for rule in session.scalars(select(HygieneRule).where(HygieneRule.user_id == user_pk))
            }
        lap("load")
        if not rows:
            return
        report.memories += len(rows)
        items = [Item(str(mid), text, created, last) for mid, text, created, last in rows]
        # The stored vectors are the texts' embeddings: reading them is far cheaper than
        # embedding every memory again (a point lost in a crash is embedded here; docs/hygiene.md,
        # "The job's time").
        vectors, embedded = self.vectors.stored_or_embedded(
            [item.id for item in items], [item.text for item in items]
        )
        report.embedded += embedded
        lap("vectors")
        findings = scan(items, vectors, self.thresholds, now, steps)
        mark = time.perf_counter()
        created: list[tuple[uuid.UUID, str]] = []
        with self.database.session() as session:
            for finding in findings:
                digest = signature(finding.kind, finding.ids)
                if digest in known or busy & set(finding.ids):
                    continue
                proposal = self._proposal(user_pk, finding, digest, now)
                session.add(proposal)
                session.flush()
                busy.update(finding.ids)
                report.proposed[finding.kind] += 1
                created.append((proposal.id, finding.kind))
        lap("write")
        for proposal_id, kind in created:
            if kind in standing:
                try:
                    self._apply(proposal_id, user_id, decided_by=f"rule:{standing[kind]}")
                    report.auto_applied += 1
                except MemoryStackError as exc:
                    log.info("standing hygiene rule could not apply %s: %s", proposal_id, exc.message)
        lap("apply")

    @staticmethod
    def _proposal(user_pk: uuid.UUID, finding: Finding, digest: str, now: datetime) -> HygieneProposal:
        keep = finding.keep
        archive = [mid for mid in finding.ids if mid != keep]
        preview: dict[str, Any] = {
            "archive": [{"id": mid, "text": finding.texts.get(mid, "")} for mid in archive],
            "keep": {"id": keep, "text": finding.texts.get(keep, "")} if keep else None,
            "result": finding.texts.get(keep) if keep else None,
        }
        return HygieneProposal(
            user_id=user_pk,
            kind=finding.kind,
            status="open",
            reason=finding.reason,
            memory_ids=list(finding.ids),
            keep_id=uuid.UUID(keep) if keep else None,
            preview=preview,
            score=float(finding.score),
            signature=digest,
            created_at=now,
            undo={},
        )

    # -- review ---------------------------------------------------------------------------
    def proposals(
        self,
        principal: Principal,
        *,
        user_id: str | None = None,
        status: str | None = "open",
        kind: str | None = None,
        page: int = 1,
        size: int = 50,
    ) -> tuple[list[dict[str, Any]], int]:
        """The owner's proposals, newest first (they show memory texts: the owner's only)."""
        owner = self._reader(principal, user_id)
        if status is not None and status not in STATUSES:
            raise BadInput(f"invalid status {status!r}: use one of {', '.join(STATUSES)}")
        if kind is not None and kind not in KINDS:
            raise BadInput(f"invalid kind {kind!r}: use one of {', '.join(KINDS)}")
        query = (
            select(HygieneProposal, User.user_id)
            .join(User, HygieneProposal.user_id == User.id)
            .where(User.user_id == owner)
        )
        if status is not None:
            query = query.where(HygieneProposal.status == status)
        if kind is not None:
            query = query.where(HygieneProposal.kind == kind)
        with self.database.session() as session:
            total = session.scalar(select(func.count()).select_from(query.subquery())) or 0
            rows = session.execute(
                query.order_by(HygieneProposal.created_at.desc(), HygieneProposal.id)
                .offset((page - 1) * size)
                .limit(size)
            )
            return [self._view(proposal, uid) for proposal, uid in rows], total

    def get(self, principal: Principal, proposal_id: object) -> dict[str, Any]:
        pid = _uuid(proposal_id)
        with self.database.session() as session:
            proposal, owner = self._owned(session, principal, pid)
            return self._view(proposal, owner)

    def counts(self, principal: Principal, user_id: str | None = None) -> dict[str, Any]:
        """Open proposals by kind and filtered captures by reason (no text: the admin may read)."""
        owner = user_id if user_id is not None else (None if principal.is_admin else principal.user_id)
        if owner is not None:
            principal.require_user(owner)
        query = (
            select(HygieneProposal.kind, func.count())
            .join(User, HygieneProposal.user_id == User.id)
            .where(HygieneProposal.status == "open")
            .group_by(HygieneProposal.kind)
        )
        if owner is not None:
            query = query.where(User.user_id == owner)
        with self.database.session() as session:
            open_by_kind = dict.fromkeys(KINDS, 0) | {k: int(n) for k, n in session.execute(query)}
            filtered = self.capture_filter.counts(session, owner)
        return {
            "user_id": owner,
            "open": sum(open_by_kind.values()),
            "open_by_kind": open_by_kind,
            "captures_filtered": sum(filtered.values()),
            "captures_filtered_by_reason": filtered,
        }

    # -- decisions ------------------------------------------------------------------------
    def approve(self, principal: Principal, proposal_id: object, text: str | None = None) -> dict[str, Any]:
        """Apply an open proposal; ``text`` edits the kept memory of a merge or supersession."""
        pid = _uuid(proposal_id)
        with self.database.session() as session:
            _, owner = self._owned(session, principal, pid)
        return self._apply(pid, owner, decided_by=decider(principal), text=text)

    def reject(self, principal: Principal, proposal_id: object) -> dict[str, Any]:
        """Reject an open proposal: nothing changes, and it is not proposed again."""
        pid = _uuid(proposal_id)
        with self.database.session() as session:
            proposal, owner = self._owned(session, principal, pid)
            if proposal.status != "open":
                raise Conflict(f"proposal {pid} is not open (status {proposal.status})")
            proposal.status = "rejected"
            proposal.decided_at = self.clock()
            proposal.decided_by = decider(principal)
            session.flush()
            return self._view(proposal, owner)

    def decide_many(self, principal: Principal, ids: list[str], decision: str) -> list[dict[str, Any]]:
        """Approve or reject several proposals; each succeeds or fails on its own."""
        if decision not in ("approve", "reject"):
            raise BadInput(f"invalid decision {decision!r}: use 'approve' or 'reject'")
        if not ids:
            raise BadInput("ids must name at least one proposal")
        if len(ids) > BULK_MAX:
            raise BadInput(f"at most {BULK_MAX} ids per request; got {len(ids)}")
        decide = self.approve if decision == "approve" else self.reject
        outcomes: list[dict[str, Any]] = []
        for given in ids:
            try:
                outcomes.append({"id": given, "ok": True, "proposal": decide(principal, given)})
            except MemoryStackError as exc:
                outcomes.append({"id": given, "ok": False, "error": exc.message, "status": exc.status})
        return outcomes

    def undo(self, principal: Principal, proposal_id: object) -> dict[str, Any]:
        """Undo an applied proposal within the undo window: the archived memories are active
        again (same ids, their history shows both changes) and the kept one's text and
        metadata are what they were."""
        pid = _uuid(proposal_id)
        now = self.clock()
        with self.database.session() as session:
            proposal, owner = self._owned(session, principal, pid)
            if proposal.status != "applied":
                raise Conflict(f"proposal {pid} is not applied (status {proposal.status})")
            if proposal.undo_until is not None and now > proposal.undo_until:
                raise Conflict(
                    f"proposal {pid} can no longer be undone (the window closed {iso(proposal.undo_until)})"
                )
            undo = dict(proposal.undo or {})
        archived = list(undo.get("archived", []))
        with self.database.session() as session:
            states = dict(
                session.execute(
                    select(Memory.id, Memory.state).where(Memory.id.in_([uuid.UUID(m) for m in archived]))
                ).all()
            )
        gone = [mid for mid in archived if states.get(uuid.UUID(mid)) != MemoryState.archived]
        if gone:
            raise Conflict(
                f"memories {', '.join(gone)} changed since (not archived any more); nothing was undone"
            )
        kept = undo.get("kept")
        if kept and kept.get("content") is not None:
            self.writes.update_memory(owner, kept["id"], kept["content"])
        self.states.change_state(archived, MemoryState.active, user_id=owner, changed_by=owner)
        with self.database.session() as session:
            for mid, metadata in (undo.get("metadata") or {}).items():
                session.execute(update(Memory).where(Memory.id == uuid.UUID(mid)).values(metadata_=metadata))
            undone = session.get(HygieneProposal, pid)
            assert undone is not None
            proposal = undone
            proposal.status = "undone"
            proposal.decided_at = now
            proposal.decided_by = decider(principal)
            session.flush()
            return self._view(proposal, owner)

    def _apply(
        self, pid: uuid.UUID, owner: str, *, decided_by: str, text: str | None = None
    ) -> dict[str, Any]:
        now = self.clock()
        with self.database.session() as session:
            proposal = session.get(HygieneProposal, pid)
            if proposal is None:
                raise NotFound(f"proposal {pid} not found")
            if proposal.status != "open":
                raise Conflict(f"proposal {pid} is not open (status {proposal.status})")
            if text is not None and proposal.keep_id is None:
                raise BadInput(f"a {proposal.kind} proposal keeps no memory whose text could be edited")
            ids = [uuid.UUID(m) for m in proposal.memory_ids]
            memories = {m.id: m for m in session.scalars(select(Memory).where(Memory.id.in_(ids)))}
            changed = [str(m) for m in ids if m not in memories or memories[m].state != MemoryState.active]
            if changed:
                proposal.status = "void"
                proposal.decided_at = now
                session.commit()
                raise Conflict(f"memories {', '.join(changed)} are not active any more; the proposal is void")
            keep = proposal.keep_id
            archive = [str(m) for m in ids if m != keep]
            metadata_before = {str(m): dict(memories[m].metadata_ or {}) for m in ids}
            kept_content = memories[keep].content if keep is not None else None
            kind = proposal.kind
            provenance = [
                {
                    "id": str(m),
                    "app_id": str(memories[m].app_id),
                    "project": memories[m].project,
                    "conversation_id": memories[m].conversation_id,
                    "channel": memories[m].channel,
                    "created_at": iso(memories[m].created_at),
                }
                for m in ids
                if m != keep
            ]
        edited = text is not None and text != kept_content
        if edited:
            assert keep is not None and text is not None
            self.writes.update_memory(owner, keep, text)
        self.states.change_state(archive, MemoryState.archived, user_id=owner, changed_by=owner)
        with self.database.session() as session:
            links: dict[str, dict[str, Any]] = {}
            if kind == "duplicate" and keep is not None:
                before = metadata_before[str(keep)]
                links[str(keep)] = before | {
                    "merged_from": [*before.get("merged_from", []), *provenance],
                    "hygiene_proposal": str(pid),
                }
            elif kind == "superseded" and keep is not None:
                before = metadata_before[str(keep)]
                links[str(keep)] = before | {"supersedes": [*before.get("supersedes", []), *archive]}
            for mid in archive:
                links[mid] = metadata_before[mid] | {"hygiene_proposal": str(pid)}
                if kind == "superseded" and keep is not None:
                    links[mid]["superseded_by"] = str(keep)
            for mid, metadata in links.items():
                session.execute(update(Memory).where(Memory.id == uuid.UUID(mid)).values(metadata_=metadata))
            proposal = session.get(HygieneProposal, pid)
            assert proposal is not None
            proposal.status = "applied"
            proposal.decided_at = now
            proposal.decided_by = decided_by
            proposal.undo_until = now + timedelta(days=self.settings.undo_days)
            proposal.undo = {
                "archived": archive,
                "metadata": {mid: metadata_before[mid] for mid in links},
                "kept": {"id": str(keep), "content": kept_content if edited else None} if keep else None,
            }
            if edited:
                proposal.preview = dict(proposal.preview or {}) | {"result": text, "edited": True}
            session.flush()
            return self._view(proposal, owner)

    # -- standing rules -------------------------------------------------------------------
    def rules(self, principal: Principal, user_id: str | None = None) -> list[dict[str, Any]]:
        owner = acting_user(principal, user_id)
        with self.database.session() as session:
            rows = session.scalars(
                select(HygieneRule)
                .join(User, HygieneRule.user_id == User.id)
                .where(User.user_id == owner)
                .order_by(HygieneRule.created_at)
            )
            return [self._rule(rule, owner) for rule in rows]

    def add_rule(
        self, principal: Principal, kind: str, user_id: str | None = None
    ) -> tuple[dict[str, Any], bool]:
        """Apply proposals of ``kind`` without asking (junk: also filter junk captures)."""
        if kind not in KINDS:
            raise BadInput(f"invalid kind {kind!r}: use one of {', '.join(KINDS)}")
        owner = acting_user(principal, user_id)
        with self.database.session() as session:
            user = self.owners.user(session, owner)
            same = session.scalar(
                select(HygieneRule).where(HygieneRule.user_id == user.id, HygieneRule.kind == kind)
            )
            if same is not None:
                return self._rule(same, owner), False
            rule = HygieneRule(user_id=user.id, kind=kind, created_by=decider(principal))
            session.add(rule)
            session.flush()
            return self._rule(rule, owner), True

    def remove_rule(self, principal: Principal, rule_id: object) -> str:
        rid = _uuid(rule_id, "rule id")
        with self.database.session() as session:
            row = session.execute(
                select(HygieneRule, User.user_id)
                .join(User, HygieneRule.user_id == User.id)
                .where(HygieneRule.id == rid)
            ).first()
            if row is None or not (principal.is_admin or row[1] == principal.user_id):
                raise NotFound(f"hygiene rule {rid} not found")
            session.delete(row[0])
        return str(rid)

    # -- helpers --------------------------------------------------------------------------
    @staticmethod
    def _reader(principal: Principal, user_id: str | None) -> str:
        if principal.is_admin and user_id is None:
            raise Forbidden(
                "proposals show memory texts, visible only to their owner; use a user token "
                "(the admin token may read GET /api/v1/hygiene)"
            )
        return acting_user(principal, user_id)

    @staticmethod
    def _owned(session: Any, principal: Principal, pid: uuid.UUID) -> tuple[HygieneProposal, str]:
        row = session.execute(
            select(HygieneProposal, User.user_id)
            .join(User, HygieneProposal.user_id == User.id)
            .where(HygieneProposal.id == pid)
        ).first()
        if row is None or not (principal.is_admin or row[1] == principal.user_id):
            raise NotFound(f"proposal {pid} not found")
        return row[0], row[1]

    @staticmethod
    def _view(proposal: HygieneProposal, user_id: str) -> dict[str, Any]:
        return {
            "id": str(proposal.id),
            "user_id": user_id,
            "kind": proposal.kind,
            "status": proposal.status,
            "reason": proposal.reason,
            "memory_ids": list(proposal.memory_ids),
            "keep_id": str(proposal.keep_id) if proposal.keep_id else None,
            "preview": proposal.preview,
            "score": round(proposal.score, 3),
            "created_at": iso(proposal.created_at),
            "decided_at": iso(proposal.decided_at),
            "decided_by": proposal.decided_by,
            "undo_until": iso(proposal.undo_until),
        }

    @staticmethod
    def _rule(rule: HygieneRule, user_id: str) -> dict[str, Any]:
        return {
            "id": str(rule.id),
            "user_id": user_id,
            "kind": rule.kind,
            "created_by": rule.created_by,
            "created_at": iso(rule.created_at),
        }


class HygieneScheduler(Periodic):
    """The server's schedule: ``hygiene.run()`` in a worker thread every ``hours``; 0: never
    (see :mod:`..lifecycle.periodic`)."""

    def __init__(
        self, hygiene: Hygiene, hours: float, first_delay_seconds: float = FIRST_RUN_DELAY_SECONDS
    ) -> None:
        interval_seconds = hours * 3600
        super().__init__(
            hygiene,
            hygiene.run,
            interval_seconds=interval_seconds,
            first_delay_seconds=min(first_delay_seconds, interval_seconds),
            name="hygiene run",
        )
        self.hygiene = hygiene
