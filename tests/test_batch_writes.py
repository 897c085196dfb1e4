"""The batch write path (memories/write/batch.py) with real stores (SQLite, Qdrant Edge, the
ONNX model): a batch answers and stores exactly what the same items written one by one would,
and its vectors are the single-text embeddings."""

from __future__ import annotations

import math
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

import claude_code_memory.engine  # noqa: F401 - first: it sets mem0's telemetry switches before mem0 loads
from claude_code_memory.db.models import ConsentDecision, ConsentRule, Memory
from claude_code_memory.engine.embedder import OnnxMiniLmEmbedder
from claude_code_memory.memories.service import MemoryService
from claude_code_memory.memories.write.items import item_arguments
from tests.support.parts import open_service

SECRET = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"

ITEMS: list[dict[str, Any]] = [
    {"text": "Quokka-lab builds with Bazel and caches on a shared NFS volume", "project": "/work/quokka"},
    {"text": f"The deploy token for wombat is {SECRET}, rotate it monthly", "project": "/work/ok"},
    {"text": "the deploy token for WOMBAT is " + SECRET + ", rotate it monthly", "project": "/work/ok"},
    {"text": "Long notes about the release train. " * 700, "project": "/work/ok"},
    {"text": "The denied project keeps its build secrets in vault", "project": "/work/denied"},
    {"text": "User: ok\n\nAssistant: ok", "project": "/work/ok"},
    {"text": "Stored before the batch: the CI runs on Tuesdays", "project": "/work/ok"},
    {"text": "   ", "project": "/work/ok"},
    {"text": "QUOKKA-LAB builds with Bazel and caches on a shared NFS volume", "project": "/work/quokka"},
    {
        "text": "Turn of a conversation: we agreed to ship the importer on Friday",
        "project": "/work/ok",
        "conversation_id": "conv-1",
        "metadata": {"source": "test"},
    },
    {
        "text": "A second turn: the importer needs a dry-run flag first",
        "conversation_id": "conv-1",
        "project": "/work/ok",
    },
    {"text": "Not a project write: my editor is Helix with the default keymap"},
]


@pytest.fixture
def service(tmp_path: Path) -> Iterator[MemoryService]:
    with open_service(tmp_path / "data", {"performance.max_memory_chars": 20_000}) as opened:
        yield opened


def _prepare(service: MemoryService, user_id: str) -> None:
    """The user's consent rules (allow /work/ok, deny /work/denied) and one stored memory."""
    service.writes.add_memory(
        user_id=user_id, app_name="claude-code", text=ITEMS[6]["text"], project="/work/ok"
    )
    with service.database.session() as session:
        user = service.owners.user(session, user_id)
        session.add(ConsentRule(user_id=user.id, project_pattern="*ok", effect="allow", created_by="test"))
        session.add(ConsentRule(user_id=user.id, project_pattern="*denied", effect="deny", created_by="test"))


def _singles(service: MemoryService, user_id: str, channel: str) -> list[dict[str, Any]]:
    """The items written one request at a time, as ``add_memories`` reports them."""
    outcomes: list[dict[str, Any]] = []
    for index, item in enumerate(ITEMS):
        try:
            results = service.writes.add_memory(
                **item_arguments(item), user_id=user_id, app_name="claude-code", channel=channel
            )
            outcomes.append({"index": index, "results": results})
        except Exception as exc:
            outcomes.append({"index": index, "error": exc.message, "code": exc.code, "status": exc.status})  # type: ignore[attr-defined]
    return outcomes


def _without_ids(outcomes: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[str]]:
    """Each id replaced by the order it first appears in: equal shapes, whatever the uuids."""
    seen: list[str] = []
    plain = []
    for outcome in outcomes:
        results = []
        for result in outcome.get("results", []):
            if result.get("id") is not None:
                if result["id"] not in seen:
                    seen.append(result["id"])
                result = {**result, "id": seen.index(result["id"])}
            results.append(result)
        plain.append({**outcome, "results": results} if "results" in outcome else outcome)
    return plain, seen


def _rows(service: MemoryService, user_id: str) -> list[dict[str, Any]]:
    with service.database.session() as session:
        user = service.owners.user(session, user_id)
        rows = []
        for memory in session.scalars(
            select(Memory).where(Memory.user_id == user.id).order_by(Memory.created_at)
        ):
            decisions = session.scalars(
                select(ConsentDecision).where(ConsentDecision.memory_id == memory.id)
            ).all()
            rows.append(
                {
                    "content": memory.content,
                    "hash": memory.content_hash,
                    "state": memory.state.value,
                    "consent": memory.consent,
                    "redactions": memory.redactions,
                    "project": memory.project,
                    "task": memory.task,
                    "channel": memory.channel,
                    "metadata": memory.metadata_,
                    "conversation_id": memory.conversation_id,
                    "has_captured_at": memory.captured_at is not None,
                    "has_expiry": memory.expires_at is not None,
                    "categories": sorted(c.name for c in memory.categories),
                    "decisions": sorted(
                        (d.decision, d.decided_by.split(":")[0], d.edited) for d in decisions
                    ),
                }
            )
        return rows


def _point(service: MemoryService, memory_id: str) -> dict[str, Any]:
    point = service.vectors.engine.store.get(memory_id)
    assert point is not None, memory_id
    volatile = {"created_at", "updated_at", "created_ts", "user_id", "app_id"}
    return {k: v for k, v in (point.payload or {}).items() if k not in volatile}


@pytest.mark.parametrize("channel", ["capture", "rest"])
def test_a_batch_answers_and_stores_what_single_writes_would(service: MemoryService, channel: str) -> None:
    single_user, batch_user = f"s{uuid.uuid4().hex[:8]}", f"b{uuid.uuid4().hex[:8]}"
    _prepare(service, single_user)
    _prepare(service, batch_user)
    batch = service.writes.add_memories(
        user_id=batch_user, app_name="claude-code", items=ITEMS, channel=channel
    )
    single = _singles(service, single_user, channel)

    single_plain, single_ids = _without_ids(single)
    batch_plain, batch_ids = _without_ids(batch)
    assert batch_plain == single_plain
    events = [r["event"] for o in single for r in o.get("results", [])]
    if channel == "capture":  # every kind of answer is in the mix
        assert {"ADD", "PENDING", "NONE", "FILTERED"} <= set(events)
        assert {o.get("status") for o in single} >= {403, 422}  # the denied project, the blank text
    else:  # over performance.max_memory_chars: refused, not truncated, on the rest channel
        assert 413 in {o.get("status") for o in single}
    assert any(
        r.get("already_existed") and r["state"] == "pending" for o in single for r in o.get("results", [])
    ) == (channel == "capture")
    assert _rows(service, batch_user) == _rows(service, single_user)
    assert any(row["redactions"] for row in _rows(service, batch_user))
    assert all(SECRET not in row["content"] for row in _rows(service, batch_user))

    # The points: the same payloads, one mem0 ADD history row each, the same vectors.
    added = [
        (s["id"], b["id"])
        for so, bo in zip(single, batch, strict=True)
        for s, b in zip(so.get("results", []), bo.get("results", []), strict=True)
        if s["event"] == "ADD"
    ]
    assert added and len(batch_ids) == len(single_ids)
    vectors = service.vectors.engine.stored_vectors([b for _, b in added] + [s for s, _ in added])
    for single_id, batch_id in added:
        assert _point(service, batch_id) == _point(service, single_id)
        assert service.vectors.history_count(batch_id) == 1
        assert vectors[batch_id] == pytest.approx(vectors[single_id], abs=1e-6)


def test_batch_vectors_are_the_single_text_embeddings(service: MemoryService) -> None:
    """Not from the cache: the batch is embedded first, and compared with a fresh model run one
    text at a time."""
    texts = [
        "Short one.",
        "A somewhat longer memory about the way the staging cluster is patched every second week",
        "Mid-length: the team lunch moved to Thursdays at noon",
    ]
    outcomes = service.writes.add_memories(
        user_id="vectors", app_name="t", items=[{"text": t} for t in texts], channel="rest"
    )
    ids = [o["results"][0]["id"] for o in outcomes]
    stored = service.vectors.engine.stored_vectors(ids)
    fresh = OnnxMiniLmEmbedder(cache_size=0)
    for memory_id, text in zip(ids, texts, strict=True):
        alone = fresh.embed(text)
        cosine = sum(a * b for a, b in zip(stored[memory_id], alone, strict=True))
        assert math.isclose(cosine, 1.0, abs_tol=1e-5), (text, cosine)
    assert [h["id"] for h in service.vectors.search(texts[1], filters={"user_id": "vectors"}, limit=1)] == [
        ids[1]
    ]


def test_a_batch_that_loses_a_race_leaves_no_points_and_answers_per_item(service: MemoryService) -> None:
    """A writer stores one of the batch's texts between the gate and the batch's transaction:
    the batch's points are removed and each item is written again on its own."""
    from claude_code_memory.memories.write import batch as batch_writes

    texts = ["Race: the first text of the batch", "Race: the text another writer stores first"]
    real = batch_writes.BatchWrite._store
    orphans: list[str] = []

    def racing(self: batch_writes.BatchWrite, accepted: list[Any], *args: Any) -> None:
        service.writes.add_memory(user_id="racer", app_name="t", text=texts[1])
        orphans.extend(str(item.memory_id) for item in accepted)
        real(self, accepted, *args)

    batch_writes.BatchWrite._store = racing  # type: ignore[method-assign]
    try:
        outcomes = service.writes.add_memories(
            user_id="racer", app_name="t", items=[{"text": t} for t in texts], channel="rest"
        )
    finally:
        batch_writes.BatchWrite._store = real  # type: ignore[method-assign]
    assert [o["results"][0]["event"] for o in outcomes] == ["ADD", "NONE"]
    assert orphans and not any(service.vectors.exists(memory_id) for memory_id in orphans)
    assert not any(service.vectors.history_count(memory_id) for memory_id in orphans)
    assert sorted(row["content"] for row in _rows(service, "racer")) == sorted(texts)


def test_a_batch_is_stored_in_a_few_transactions_not_one_a_memory(service: MemoryService) -> None:
    """The point of the batch path: 40 memories, one gate transaction and one for the rows
    (the single path commits twice a memory), one vector upsert, one history transaction (a row a memory)."""
    from sqlalchemy import event

    commits: list[int] = []
    event.listen(service.database.engine, "commit", lambda _: commits.append(1))
    stamps_before = service.vectors.history_ids()
    items = [{"text": f"Batch fact {n}: the nightly job {n} writes to bucket {n * 3}"} for n in range(40)]
    outcomes = service.writes.add_memories(user_id="few", app_name="t", items=items, channel="rest")
    assert [o["results"][0]["event"] for o in outcomes] == ["ADD"] * 40
    assert len(commits) <= 3, len(commits)
    assert len(service.vectors.history_ids() - stamps_before) == 40


def test_a_refused_user_or_paused_app_fails_every_item_as_single_writes_do(service: MemoryService) -> None:
    from claude_code_memory.db.models import App

    items = [{"text": "One fact for a paused app"}, {"text": "  "}, {"text": "Another fact for it"}]
    service.writes.add_memory(user_id="pauser", app_name="paused", text="Written before the pause")
    with service.database.session() as session:
        app = session.scalar(select(App).where(App.name == "paused"))
        assert app is not None
        app.is_active = False
    for user_id in ("pauser", "no such user/with a slash"):
        batch = service.writes.add_memories(user_id=user_id, app_name="paused", items=items, channel="rest")
        single = []
        for index, item in enumerate(items):
            try:
                single.append(
                    {
                        "index": index,
                        "results": service.writes.add_memory(
                            **item_arguments(item), user_id=user_id, app_name="paused"
                        ),
                    }
                )
            except Exception as exc:
                single.append({"index": index, "error": exc.message, "code": exc.code, "status": exc.status})  # type: ignore[attr-defined]
        assert batch == single
        assert all("error" in outcome for outcome in batch), batch
