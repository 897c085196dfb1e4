"""A batch of writes stored together: the gate per item, then one embedding call, one vector
upsert, one history transaction and one SQL transaction for all of them.

    BatchWrite(writes).add(user_id=..., app_name=..., items=[...], channel="rest") -> outcomes

Each item gets exactly the answer a single write (:meth:`.writes.Writes.add_memory`) would
give it, written one after another in the batch's order: its own error (``{"index", "error",
"code", "status"}``), ``FILTERED``, ``PENDING``, ``ADD``, or "already existed" for a text the
store holds or an earlier item of the batch carries. Only the work after the gate is shared:

1. one gate session: the user and app, the consent rules and the quota looked up once, the
   stored twins of every item's text in one query; the quota counts the batch's earlier items;
2. the admitted texts embedded through one embedder call (``Vectors.embed_batch`` in
   store/vectors.py; the int8 model still runs one text a run: docs/search.md, "The
   embedding model", says why);
3. every point in one upsert and its mem0 history in one transaction (``Vectors.add_many``);
4. the SQL rows, categories and consent decisions in one transaction (their columns:
   :mod:`.rows`, as the single write builds them).

Crash-safety is the single write's: the vectors are stored before the rows (reconcile.py), so
a crash at any point leaves points without rows, orphans the reconciler removes, and never a
row without its point. When the SQL transaction fails on the same-text index (another writer
stored one of the texts since step 1) the batch's points are removed and the items are
written again one by one, each answering as a single write would.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, Protocol, Unpack

from sqlalchemy import insert
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from ...db.database import Database
from ...db.models import Memory, User
from ...domain.memory_state import MemoryState
from ...errors import MemoryStackError
from ...policy.gate import Admitted, Facts, Policy, Write, admit
from ...store.owners import Owners
from ...store.values import already_existed
from ...store.vectors import Vectors, point_payload
from .arguments import WriteArguments
from .capture_filter import CaptureFilter
from .category_links import CategoryLinks
from .items import item_arguments, make_write
from .rows import consent_decision, row_values, same_text, stored_twins
from .usage import Usage


class SingleWrites(Protocol):
    """What a batch needs of the single write path (:class:`.writes.Writes`, which builds the
    batch): its parts, the facts its gate decides on, and the single write itself for the
    batches that go item by item. Declared here so that this module never imports ``writes``."""

    database: Database
    owners: Owners
    vectors: Vectors
    usage: Usage
    policy: Policy
    categories: CategoryLinks
    capture_filter: CaptureFilter | None
    clock: Callable[[], datetime]

    def facts(self, session: Session, user: User, channel: str | None = None) -> Facts: ...

    def add_memory(self, **write: Unpack[WriteArguments]) -> list[dict[str, Any]]: ...

    def prime_embeddings(self, texts: Iterable[str]) -> int: ...


@dataclass
class _Item:
    """One admitted item: its place in the batch, what the gate admitted, its new row's id."""

    index: int
    admitted: Admitted
    memory_id: uuid.UUID


class BatchWrite:
    def __init__(self, writes: SingleWrites) -> None:
        self.writes = writes

    def add(
        self, *, user_id: str, app_name: str, items: Sequence[dict[str, Any]], channel: str
    ) -> list[dict[str, Any]]:
        w = self.writes
        if w.vectors.has_llm and any(raw.get("infer") for raw in items):
            # mem0 extracts facts from these with the LLM, one text at a time.
            return self.add_each(user_id=user_id, app_name=app_name, items=items, channel=channel)
        outcomes: dict[int, dict[str, Any]] = {}
        writes: list[tuple[int, Write]] = []
        for index, raw in enumerate(items):
            try:
                arguments = item_arguments(raw)
                writes.append(
                    (index, make_write(user_id=user_id, app_name=app_name, channel=channel, **arguments))
                )
            except MemoryStackError as exc:
                outcomes[index] = _error(index, exc)
        accepted: list[_Item] = []
        user, app = None, None
        with w.database.session() as session:
            try:
                if writes:
                    user, app = w.owners.user_app(session, user_id, app_name)
            except MemoryStackError as exc:
                outcomes.update({index: _error(index, exc) for index, _ in writes})
                writes = []
            if user is not None and app is not None:
                user_pk, app_pk = user.id, app.id
                facts = w.facts(session, user, channel)
                # First each item through the gate against the quota used before the batch...
                gated: list[tuple[int, Write, Admitted]] = []
                for index, write in writes:
                    try:
                        w.owners.require_active(app, "create new memories")
                        if w.capture_filter is not None:
                            reason = w.capture_filter.check(session, user_pk, write.text, channel)
                            if reason is not None:
                                outcomes[index] = _filtered(index, reason)
                                continue
                        gated.append((index, write, admit(write, w.policy, facts)))
                    except MemoryStackError as exc:
                        outcomes[index] = _error(index, exc)
                twins = stored_twins(session, user_pk, [admitted.content_hash for _, _, admitted in gated])
                # ...then in order, counting the items stored before each against the quota.
                batch: dict[str, _Item] = {}  # an earlier item of this batch, by its text's hash
                used = facts.used_bytes
                for index, write, admitted in gated:
                    size = len(admitted.text.encode("utf-8"))
                    if used + size > w.policy.quota_bytes:
                        try:  # the gate's own refusal, as a write after the earlier items gets it
                            admit(write, w.policy, replace(facts, used_bytes=used))
                        except MemoryStackError as exc:
                            outcomes[index] = _error(index, exc)
                            continue
                    twin = twins.get(admitted.content_hash)
                    earlier = batch.get(admitted.content_hash)
                    if twin is not None:
                        outcomes[index] = {"index": index, "results": [already_existed(twin)]}
                    elif earlier is not None:
                        outcomes[index] = {"index": index, "results": [_existed(earlier)]}
                    else:
                        fresh = _Item(index, admitted, uuid.uuid4())
                        batch[admitted.content_hash] = fresh
                        accepted.append(fresh)
                        used += size
        if accepted:
            try:
                self._store(accepted, user_id, user_pk, app_pk)
            except IntegrityError as exc:
                if not same_text(exc):
                    raise
                # Another writer stored one of these texts since the gate looked: each item
                # again on its own, answering as a single write would (its points are gone).
                return self.add_each(user_id=user_id, app_name=app_name, items=items, channel=channel)
            for item in accepted:
                w.usage.add(user_pk, item.admitted.text)
                outcomes[item.index] = {"index": item.index, "results": [_added(item)]}
        return [outcomes[index] for index in range(len(items))]

    def add_each(
        self, *, user_id: str, app_name: str, items: Sequence[dict[str, Any]], channel: str
    ) -> list[dict[str, Any]]:
        """The batch one item after another, each a write of its own (embedded together first)."""
        w = self.writes
        w.prime_embeddings(raw.get("text") for raw in items)  # type: ignore[misc]
        outcomes: list[dict[str, Any]] = []
        for index, raw in enumerate(items):
            try:
                results = w.add_memory(
                    **item_arguments(raw), user_id=user_id, app_name=app_name, channel=channel
                )
                outcomes.append({"index": index, "results": results})
            except MemoryStackError as exc:
                outcomes.append(_error(index, exc))
        return outcomes

    def _store(self, accepted: list[_Item], user_id: str, user_pk: uuid.UUID, app_pk: uuid.UUID) -> None:
        """The points of the active items (one embedding call, one upsert), then every row in
        one transaction; a failed transaction removes the points it would have described."""
        w = self.writes
        active = [item for item in accepted if item.admitted.state == "active"]
        vectors = w.vectors.embed_batch([item.admitted.text for item in active]) if active else []
        embedded = dict(zip([item.index for item in active], vectors, strict=True))
        rows: list[tuple[dict[str, Any], Admitted, list[float] | None]] = []
        points = []
        for item in accepted:  # in the batch's order: each row's time is when it was reached
            now = w.clock()
            vector = embedded.get(item.index)
            if vector is None:  # waits for consent: a row, no point
                row = row_values(item.admitted, item.memory_id, user_pk, app_pk, MemoryState.pending, now)
                rows.append((row, item.admitted, None))
                continue
            write = item.admitted.write
            payload = point_payload(
                app_name=write.app,
                app_id=str(app_pk),
                state=MemoryState.active,
                channel=write.channel,
                created_at=now,
                project=write.project,
                conversation_id=write.conversation_id,
                expires_at=item.admitted.expires_at,
            )
            points.append((str(item.memory_id), item.admitted, vector, payload))
            row = row_values(item.admitted, item.memory_id, user_pk, app_pk, MemoryState.active, now)
            rows.append((row, item.admitted, vector))
        w.vectors.add_many(points, user_id=user_id)
        try:
            with w.database.session() as session:
                # A racing writer of one of these texts fails here, on the index. The rows go in
                # by their texts' hashes, whatever the batch's order: two batches holding texts
                # the other waits for would deadlock (PostgreSQL aborts one of them).
                ordered = sorted((row for row, _, _ in rows), key=lambda row: row["content_hash"] or "")
                session.execute(insert(Memory), ordered)
                stored = [(row, admitted, vector) for row, admitted, vector in rows if vector is not None]
                w.categories.link_new(
                    session, [(row["id"], row["content"], vector) for row, _, vector in stored]
                )
                for row, admitted, _ in stored:
                    decision = consent_decision(admitted, row["id"], user_pk, "")
                    if decision is not None:
                        session.add(decision)
        except Exception:
            for memory_id, _, _, _ in points:  # a point without its row would be an orphan
                w.vectors.delete(memory_id)
            raise


def _error(index: int, exc: MemoryStackError) -> dict[str, Any]:
    return {"index": index, "error": exc.message, "code": exc.code, "status": exc.status}


def _filtered(index: int, reason: str) -> dict[str, Any]:
    return {
        "index": index,
        "results": [{"id": None, "memory": None, "event": "FILTERED", "reason": f"junk: {reason}"}],
    }


def _added(item: _Item) -> dict[str, Any]:
    if item.admitted.state == "pending":
        return {
            "id": str(item.memory_id),
            "memory": item.admitted.text,
            "event": "PENDING",
            "state": "pending",
        }
    # What mem0's Memory.add answers for a text it stored verbatim (infer=False).
    return {
        "id": str(item.memory_id),
        "memory": item.admitted.text,
        "event": "ADD",
        "actor_id": None,
        "role": "user",
    }


def _existed(item: _Item) -> dict[str, Any]:
    """ "Already existed", for an item whose text an earlier item of the batch carries."""
    return {
        "id": str(item.memory_id),
        "memory": item.admitted.text,
        "event": "NONE",
        "already_existed": True,
        "state": item.admitted.state,
    }
