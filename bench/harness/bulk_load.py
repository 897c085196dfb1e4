"""Bench only: fill a stopped server's data directory with synthetic memories, fast. JSON.

    .venv/bin/python -m bench.harness.bulk_load --data-dir DIR/data --total 1000000 [--user bench]

What ``bench/perf/server.py --bulk-load`` runs between two starts of the server, to reach 100k and
1M memories in minutes where the API (one embedding a memory) would take hours. It writes what a
``POST /api/v1/memories/batch`` of the same turns would have written, with the project's own
modules, offline (the server must be stopped: Edge locks its shard, and the server caches
counts):

* the SQL row of each memory (``db.models.Memory``: the text, its ``policy.gate.content_hash``,
  ``channel`` "rest", consent "explicit", the turn's ``conversation_id`` and ``captured_at``),
  and its categories (``search.categories.Categoriser`` on the text's vector); the keyword index
  (FTS5) fills itself from the rows, through the triggers of migration 0003;
* its vector point (``engine.edge_store.QdrantEdgeStore``) with the payload a write stores:
  ``memories.vectors.point_payload`` plus mem0's own fields (``user_id``, ``role``, ``hash``,
  ``created_at``, ``updated_at``);
* mem0's history row (``ADD``), which the start-up reconciliation reads.

Not written: entity links and tier segments, which a real write leaves for later too
(``entities_indexed`` false, ``segment_id`` null), and the per-user byte count (recounted on
the next write).

**The embeddings are precomputed, not computed per memory.** The texts are
``bench.harness.synthetic``'s: 7,056 distinct sentences ("Alice deployed PostgreSQL 16 last
week"), each memory one of them followed by ``(note N)``. Each distinct sentence is embedded
once by the server's own model (``engine.embedder``, cached in ``--cache``), and a memory's
vector is that embedding plus Gaussian noise, normalised. The noise is sized so that two
memories of one sentence are as close as the model makes two real notes of it: measured on
200 synthetic texts, "X (note 17)" and "X (note 98231)" have a cosine of 0.964 on average, and
the noise here (norm 0.19) gives 0.965. Exact copies would give HNSW thousands of identical
points (a worst case it never meets in real text); random unit vectors have no near neighbours
at all (the other worst case, bench/perf/index_build.py). Queries are embedded by the server as usual.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sqlite3
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
from mem0.memory.storage import SQLiteManager
from sqlalchemy import func, insert, select

from bench.harness.paths import ROOT
from bench.harness.synthetic import provenance, synthetic
from claude_code_memory.config import load_settings
from claude_code_memory.db.database import Database
from claude_code_memory.db.get_or_create import get_or_create, get_or_create_user
from claude_code_memory.db.models import Category, Memory, MemoryCategory, utcnow
from claude_code_memory.domain.memory_state import MemoryState
from claude_code_memory.engine.edge_store import QdrantEdgeStore
from claude_code_memory.engine.embedder import OnnxMiniLmEmbedder
from claude_code_memory.memories.write.categories import Categoriser
from claude_code_memory.policy.gate import content_hash
from claude_code_memory.store.owners import Owners
from claude_code_memory.store.vectors import point_payload

#: Norm of the noise added to a sentence's embedding (see the module's docstring).
NOISE_NORM = 0.19
CHUNK = 5000


def base_of(text: str) -> str:
    """The distinct sentence a synthetic memory is a note of."""
    return text.rsplit(" (note ", 1)[0]


def sentence_vectors(bases: list[str], cache: Path) -> dict[str, np.ndarray]:
    """Each distinct sentence's embedding by the server's model, kept in ``cache`` (npz)."""
    known: dict[str, np.ndarray] = {}
    if cache.exists():
        with np.load(cache) as stored:
            known = dict(zip(stored["texts"].tolist(), stored["vectors"], strict=True))
    missing = sorted(set(bases) - known.keys())
    if missing:
        embedder = OnnxMiniLmEmbedder(cache_size=0)
        for text in missing:
            known[text] = np.asarray(embedder.embed(text), dtype=np.float32)
        texts = sorted(known)
        cache.parent.mkdir(parents=True, exist_ok=True)
        np.savez(cache, texts=np.array(texts), vectors=np.stack([known[t] for t in texts]))
    return known


def bulk_load(
    data_path: Path,
    *,
    total: int,
    user_id: str = "bench",
    app_name: str = "bench",
    turns: int = 20,
    cache: Path | None = None,
    seed: int = 7,
) -> dict[str, Any]:
    """Bring ``user_id``'s memories up to ``total`` (the first ``total`` of ``synthetic``);
    returns what it wrote and how long each step took."""
    started = time.perf_counter()
    data_path.mkdir(parents=True, exist_ok=True)
    settings = load_settings(ROOT / "config.yaml", overrides={"server.data_dir": str(data_path)})
    database = Database(settings.database_url)
    database.migrate()
    report: dict[str, Any] = {}
    try:
        with database.session() as session:
            user = get_or_create_user(session, user_id)
            app = Owners(database).app(session, user, app_name)
            user_pk, app_pk = user.id, app.id
            stored = session.scalar(select(func.count()).select_from(Memory).where(Memory.user_id == user_pk))
        texts = synthetic(total)[stored:]
        report["existing"], report["added"] = stored, len(texts)
        if not texts:
            return report
        bases = [base_of(t) for t in texts]
        step = time.perf_counter()
        vectors = sentence_vectors(bases, cache or data_path.parent / "bench-sentence-vectors.npz")
        report["embed_sentences_s"] = round(time.perf_counter() - step, 1)

        step = time.perf_counter()
        embedder: OnnxMiniLmEmbedder | None = None

        def embed_batch(batch: list[str]) -> list[list[float]]:
            nonlocal embedder
            embedder = embedder or OnnxMiniLmEmbedder(cache_size=0)
            return embedder.embed_batch(batch)

        categoriser = Categoriser(embed_batch)  # embeds its category descriptions once
        names_of = {b: categoriser.categorise(vectors[b].tolist(), b) for b in set(bases)}
        with database.session() as session:
            category_ids = {
                name: get_or_create(session, Category, {"name": name}, {}).id
                for name in sorted({n for names in names_of.values() for n in names})
            }
        report["categories_s"] = round(time.perf_counter() - step, 1)

        store = QdrantEdgeStore(
            settings.storage.collection_name, data_path / "vectors", settings.embedder.dims, index_from=0
        )
        store.reload_share = float("inf")  # one load at the end instead of one each 10%
        history_path = data_path / "mem0" / "history.db"
        if not history_path.exists():  # a directory no server has opened yet: mem0 makes it
            history_path.parent.mkdir(parents=True, exist_ok=True)
            SQLiteManager(str(history_path)).close()
        history = sqlite3.connect(history_path)
        rng = np.random.default_rng(seed + stored)
        spent = {"vectors_s": 0.0, "rows_s": 0.0, "history_s": 0.0}
        try:
            for start in range(0, len(texts), CHUNK):
                _chunk(
                    database,
                    store,
                    history,
                    rng,
                    texts[start : start + CHUNK],
                    bases[start : start + CHUNK],
                    first=stored + start,
                    turns=turns,
                    vectors=vectors,
                    names_of=names_of,
                    category_ids=category_ids,
                    user=(user_id, user_pk),
                    app=(app_name, app_pk),
                    spent=spent,
                )
        finally:
            history.close()
            store.close()
        report.update({key: round(value, 1) for key, value in spent.items()})
        report["total_s"] = round(time.perf_counter() - started, 1)
        return report
    finally:
        database.close()


def _chunk(
    database: Database,
    store: QdrantEdgeStore,
    history: sqlite3.Connection,
    rng: np.random.Generator,
    texts: list[str],
    bases: list[str],
    *,
    first: int,
    turns: int,
    vectors: dict[str, np.ndarray],
    names_of: dict[str, list[str]],
    category_ids: dict[str, uuid.UUID],
    user: tuple[str, uuid.UUID],
    app: tuple[str, uuid.UUID],
    spent: dict[str, float],
) -> None:
    (user_id, user_pk), (app_name, app_pk) = user, app
    now = utcnow()
    stamp = now.replace(tzinfo=UTC).isoformat()
    ids = [uuid.uuid4() for _ in texts]
    turn = [provenance(first + offset, turns) for offset in range(len(texts))]

    step = time.perf_counter()
    matrix = np.stack([vectors[b] for b in bases])
    noise = rng.standard_normal(matrix.shape).astype(np.float32)
    noise *= NOISE_NORM / np.sqrt(matrix.shape[1])
    matrix += noise
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    payloads = []
    for text, fields in zip(texts, turn, strict=True):
        payload = point_payload(
            app_name=app_name,
            app_id=str(app_pk),
            state=MemoryState.active,
            channel="rest",
            created_at=now,
            conversation_id=fields.get("conversation_id"),
        )
        payload.update(
            user_id=user_id,
            role="user",
            hash=hashlib.md5(text.encode()).hexdigest(),
            created_at=stamp,
            updated_at=stamp,
        )
        payloads.append(payload)
    store.insert(matrix.tolist(), payloads, [str(i) for i in ids])
    spent["vectors_s"] += time.perf_counter() - step

    step = time.perf_counter()
    rows = [
        {
            "id": memory_id,
            "user_id": user_pk,
            "app_id": app_pk,
            "content": text,
            "content_hash": content_hash(text),
            "metadata_": {"channel": "rest"},
            "state": MemoryState.active,
            "created_at": now,
            "updated_at": now,
            "channel": "rest",
            "conversation_id": fields.get("conversation_id"),
            "captured_at": _naive(fields.get("captured_at")),
            "consent": "explicit",
            "redactions": 0,
            "entities_indexed": False,
        }
        for memory_id, text, fields in zip(ids, texts, turn, strict=True)
    ]
    links = [
        {"memory_id": memory_id, "category_id": category_ids[name]}
        for memory_id, base in zip(ids, bases, strict=True)
        for name in names_of[base]
    ]
    with database.session() as session:
        session.execute(insert(Memory), rows)
        if links:
            session.execute(insert(MemoryCategory), links)
    spent["rows_s"] += time.perf_counter() - step

    step = time.perf_counter()
    history.executemany(
        "INSERT INTO history (id, memory_id, old_memory, new_memory, event, created_at, updated_at, "
        "is_deleted, actor_id, role) VALUES (?, ?, NULL, ?, 'ADD', ?, ?, 0, NULL, 'user')",
        [(str(uuid.uuid4()), str(i), text, stamp, stamp) for i, text in zip(ids, texts, strict=True)],
    )
    history.commit()
    spent["history_s"] += time.perf_counter() - step


def _naive(value: str | None) -> datetime | None:
    if value is None:
        return None
    return datetime.fromisoformat(value.replace("Z", "+00:00")).astimezone(UTC).replace(tzinfo=None)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data-dir", type=Path, required=True, help="the server's data directory")
    parser.add_argument("--total", type=int, required=True, help="memories the user holds afterwards")
    parser.add_argument("--user", default="bench")
    parser.add_argument("--app", default="bench")
    parser.add_argument("--turns", type=int, default=20, help="turns per conversation (0: none)")
    parser.add_argument("--cache", type=Path, help="where the sentences' embeddings are kept")
    args = parser.parse_args()
    report = bulk_load(
        args.data_dir.resolve(),
        total=args.total,
        user_id=args.user,
        app_name=args.app,
        turns=args.turns,
        cache=args.cache,
    )
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
