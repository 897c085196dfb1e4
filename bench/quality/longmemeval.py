"""Retrieval benchmark on LongMemEval-S through the memory service, in process. Prints JSON.

    .venv/bin/python -m bench.quality.longmemeval [--data ../shared/bench/longmemeval-dev.json.gz]
        [--limit N] [--per-type N] [--questions ID,ID...] [--variant LABEL:KEY=VALUE[,KEY=VALUE...]]...
        [--half tune|score] [--no-cache] [--store DIR] [--out FILE]

One user per question; every turn of its haystack is one memory (``content`` as text, the
turn's role in metadata, its session — numbered by position, never by its id — as
``conversation_id``, and the session's date plus the turn's position in seconds as
``captured_at``), written through :meth:`MemoryService.add_memories` (the policy gate, real
SQLite, Qdrant Edge and the ONNX embedder). Then the question is searched as asked on its
``question_date`` (``SearchRequest(now=...)``), and scored: session recall_any@5/@10 (a top-k
turn belongs to an answer session), the same over the top k *distinct* sessions (as
LongMemEval's own scoring ranks sessions), turn recall_any@10 (a top-10 turn has
``has_answer``), MRR of the first turn in an answer session and of the first answer turn, per
question type, and search latency (indicative only). Abstention questions (``_abs``) are left
out. What names the evidence (``answer_`` session ids, ``has_answer``) stays in this process's
scoring; the service never sees it.

The store is built once; each ``--variant`` re-runs the searches with those ``search.*``
settings switched in this process, so an ablation compares rankings on the same data
(``bench.as_of=0``: searched without the question's date, relative dates then read against the
newest memory, as before search took a ``now``). ``--half tune`` keeps the questions a ranking
change may be tuned on, ``--half score`` the others, held out and only scored
(:func:`half_of`: a fixed rule by question id). The
embedder is deterministic, so its vectors are kept between runs in a file keyed by each text's
hash (``$CCMEM_BENCH_CACHE``, default ``~/.cache/ccmem-bench/embeddings.sqlite``; the model still
runs for every text it has not seen). ``--store DIR`` keeps the written store (and which memory
is which turn) in ``DIR``, and a later run with the same ``--store`` searches it instead of
writing every haystack again (ten minutes on a busy 2-core machine): for ranking changes, which
need no new writes.
``--out`` also writes the report to a file
(``bench/results/longmemeval_dev_<commit>.json`` by convention).

The data (LongMemEval, Wu et al., ICLR 2025; MIT) is test data and is not part of this
repository; see ../shared/bench/README.md.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from bench.harness.paths import ROOT
from bench.harness.stats import percentiles
from bench.quality.locomo import HALVES, variant

#: The shared data beside the checkout (a worktree's is a level further up).
DEFAULT_DATA = next(
    (
        folder / "shared" / "bench" / "longmemeval-dev.json.gz"
        for folder in ROOT.parents
        if (folder / "shared" / "bench" / "longmemeval-dev.json.gz").exists()
    ),
    ROOT.parent / "shared" / "bench" / "longmemeval-dev.json.gz",
)
DEFAULT_CACHE = Path.home() / ".cache" / "ccmem-bench" / "embeddings.sqlite"
#: Results asked of each search: enough for ten distinct sessions.
SEARCH_LIMIT = 50
APP = "longmemeval"


def half_of(question_id: str) -> str:
    """The half of the development split a question is in: ``tune`` (changes are chosen on it)
    or ``score`` (held out, only scored), by the parity of the second byte of the sha256 of its
    id. A fixed rule, set before any result was seen; the split's own rule reads the first byte."""
    return HALVES[hashlib.sha256(question_id.encode()).digest()[1] % 2]


def load(path: Path) -> list[dict[str, Any]]:
    raw = path.read_bytes()
    if path.suffix == ".gz":
        raw = gzip.decompress(raw)
    return json.loads(raw)


def moment(raw: str) -> datetime:
    """LongMemEval's date ("2023/05/20 (Sat) 02:21") as a naive datetime."""
    day, _, clock = raw.partition(")")
    return datetime.strptime(day.split("(")[0].strip() + " " + clock.strip(), "%Y/%m/%d %H:%M")


@dataclass(frozen=True)
class Turn:
    text: str
    role: str
    session: int
    at: datetime
    has_answer: bool


def haystack(question: dict[str, Any]) -> list[Turn]:
    """The question's turns, each with its session's position and time (session date plus the
    turn's position in seconds, so turns keep their order)."""
    out = []
    for session, (turns, date) in enumerate(
        zip(question["haystack_sessions"], question["haystack_dates"], strict=True)
    ):
        start = moment(date)
        for position, turn in enumerate(turns):
            if not turn["content"].strip():
                continue
            out.append(
                Turn(
                    turn["content"],
                    turn["role"],
                    session,
                    start + timedelta(seconds=position),
                    bool(turn.get("has_answer")),
                )
            )
    return out


def answer_sessions(question: dict[str, Any]) -> set[int]:
    """Positions of the answer sessions in the haystack (scoring only)."""
    wanted = set(question["answer_session_ids"])
    return {i for i, sid in enumerate(question["haystack_session_ids"]) if sid in wanted}


def scored(ranked: list[Turn | None], answers: set[int]) -> dict[str, float]:
    """One question's figures from its ranked turns (None: a hit the harness did not write)."""
    sessions = [t.session if t is not None else None for t in ranked]
    distinct = list(dict.fromkeys(s for s in sessions if s is not None))
    first_session = next((i for i, s in enumerate(sessions) if s in answers), None)
    first_turn = next((i for i, t in enumerate(ranked) if t is not None and t.has_answer), None)
    return {
        "session_any@5": float(bool(answers & set(sessions[:5]))),
        "session_any@10": float(bool(answers & set(sessions[:10]))),
        "distinct_session_any@5": float(bool(answers & set(distinct[:5]))),
        "distinct_session_any@10": float(bool(answers & set(distinct[:10]))),
        "turn_any@10": float(any(t is not None and t.has_answer for t in ranked[:10])),
        "mrr_session": 0.0 if first_session is None else 1 / (first_session + 1),
        "mrr_turn": 0.0 if first_turn is None else 1 / (first_turn + 1),
    }


def summary(rows: list[tuple[str, dict[str, float]]]) -> dict[str, Any]:
    """Means over all questions and per question type."""
    if not rows:
        return {"questions": 0}
    keys = list(rows[0][1])
    by_type: dict[str, list[dict[str, float]]] = {}
    for kind, row in rows:
        by_type.setdefault(kind, []).append(row)
    return {
        "questions": len(rows),
        **{k: round(statistics.mean(r[k] for _, r in rows), 4) for k in keys},
        "by_type": {
            kind: {"n": len(v), **{k: round(statistics.mean(r[k] for r in v), 4) for k in keys}}
            for kind, v in sorted(by_type.items())
        },
    }


def by_half(rows: list[tuple[str, dict[str, float]]], halves: list[str]) -> dict[str, Any]:
    """The means over each half's questions (:func:`half_of`), types left out."""
    out = {}
    for which in HALVES:
        part = [row for row, name in zip(rows, halves, strict=True) if name == which]
        if part:
            out[which] = {key: value for key, value in summary(part).items() if key != "by_type"}
    return out


class EmbeddingCache:
    """Vectors by the hash of their text, in a SQLite file: the harness's, not the server's."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(path, check_same_thread=False)
        self.db.execute("CREATE TABLE IF NOT EXISTS v (h TEXT PRIMARY KEY, b BLOB)")
        self.lock = threading.Lock()
        self.unsaved = 0

    @staticmethod
    def key(text: str) -> str:
        return hashlib.sha256(text.encode()).hexdigest()

    def get(self, text: str) -> np.ndarray | None:
        with self.lock:
            row = self.db.execute("SELECT b FROM v WHERE h = ?", (self.key(text),)).fetchone()
        return None if row is None else np.frombuffer(row[0], dtype=np.float32)

    def put(self, text: str, vector: np.ndarray) -> None:
        with self.lock:
            self.db.execute(
                "INSERT OR REPLACE INTO v VALUES (?, ?)",
                (self.key(text), vector.astype(np.float32).tobytes()),
            )
            self.unsaved += 1
            if self.unsaved >= 200:  # an interrupted run keeps what it embedded
                self.db.commit()
                self.unsaved = 0

    def commit(self) -> None:
        with self.lock:
            self.db.commit()


@contextmanager
def cached_embeddings(cache: EmbeddingCache | None) -> Iterator[None]:
    """The ONNX embedder's model runs (writes, their prefetches and queries alike) answered from
    ``cache`` when it holds every text of the run."""
    if cache is None:
        yield
        return
    from claude_code_memory.engine.embedder import OnnxMiniLmEmbedder

    run = OnnxMiniLmEmbedder._run

    def through_cache(
        self: OnnxMiniLmEmbedder, texts: list[str], entered: threading.Event | None = None
    ) -> np.ndarray:
        found = [cache.get(text) for text in texts]
        if any(vector is None for vector in found):
            vectors = run(self, texts, entered)
            for text, vector in zip(texts, vectors, strict=True):
                cache.put(text, vector)
            return vectors
        if entered is not None:
            entered.set()
        return np.stack([vector for vector in found if vector is not None])

    OnnxMiniLmEmbedder._run = through_cache  # type: ignore[method-assign]
    try:
        yield
    finally:
        OnnxMiniLmEmbedder._run = run  # type: ignore[method-assign]
        cache.commit()


class Bench:
    """The service on a temporary data directory, with the questions' haystacks written."""

    def __init__(self, data_dir: Path) -> None:
        from claude_code_memory.config import load_settings
        from claude_code_memory.memories.server_parts import ServerParts

        self.settings = load_settings(
            config_path=ROOT / "config.yaml", environ={}, overrides={"server.data_dir": str(data_dir)}
        )
        self.parts = ServerParts(self.settings)
        self.service = self.parts.service
        self.defaults = dict(self.settings.search)
        self.turns: dict[str, dict[str, Turn]] = {}
        #: memory id → the turn's position in its haystack, per user (what ``--store`` keeps)
        self.positions: dict[str, dict[str, int]] = {}

    def written(self, user: str, turns: list[Turn], manifest: dict[str, dict[str, int]]) -> bool:
        """Take ``user``'s memories from a kept store's ``manifest`` (memory id → position in
        ``turns``) instead of writing them; False when the store does not hold the user."""
        if user not in manifest:
            return False
        self.positions[user] = manifest[user]
        self.turns[user] = {memory_id: turns[position] for memory_id, position in manifest[user].items()}
        return True

    def write(self, user: str, turns: list[Turn]) -> None:
        """Each turn one memory of ``user``; keeps memory id → turn for scoring."""
        by_memory: dict[str, Turn] = {}
        positions: dict[str, int] = {}
        for start in range(0, len(turns), 200):
            chunk = turns[start : start + 200]
            items = [
                {
                    "text": t.text,
                    "metadata": {"role": t.role},
                    "conversation_id": f"{user}-session-{t.session}",
                    "captured_at": t.at,
                }
                for t in chunk
            ]
            results = self.service.writes.add_memories(user_id=user, app_name=APP, items=items)
            for offset, (turn, outcome) in enumerate(zip(chunk, results, strict=True)):
                for result in outcome.get("results", []):
                    if result.get("event") == "ADD":
                        by_memory[str(result["id"])] = turn
                        positions[str(result["id"])] = start + offset
        self.turns[user] = by_memory
        self.positions[user] = positions

    def fill(self, questions: list[dict[str, Any]], store: Path | None) -> int:
        """Every question's haystack in the store, one user each (:func:`user_of`): written, or
        taken from the ``store`` folder kept by an earlier run (its ``manifest.json``), which
        then keeps what this run wrote too. Returns the turns written."""
        manifest_file = store / "manifest.json" if store is not None else None
        manifest = json.loads(manifest_file.read_text()) if manifest_file and manifest_file.exists() else {}
        written = 0
        for question in questions:
            turns = haystack(question)
            if not self.written(user_of(question), turns, manifest):
                self.write(user_of(question), turns)
                written += len(turns)
        if manifest_file is not None and written:
            manifest_file.write_text(json.dumps(manifest | self.positions))
        return written

    def search(
        self, user: str, query: str, now: datetime, settings: dict[str, Any]
    ) -> tuple[list[Turn | None], float]:
        for key, value in self.defaults.items():
            setattr(self.settings.search, key, value)
        as_of = settings.get("bench.as_of", "1") not in ("0", "false")
        for key, value in settings.items():
            if key == "bench.as_of":
                continue
            name = key.removeprefix("search.")
            setattr(self.settings.search, name, typed(value, self.defaults[name]))
        started = time.perf_counter()
        from claude_code_memory.search.request import SearchRequest

        asked = SearchRequest(
            user_id=user,
            app_name=APP,
            query=query,
            limit=SEARCH_LIMIT,
            now=now if as_of else None,
            with_categories=False,
        )
        hits = self.service.pipeline.search(asked)
        elapsed = time.perf_counter() - started
        return [self.turns[user].get(str(hit.memory.id)) for hit in hits], elapsed

    def close(self) -> None:
        self.parts.close()


def typed(value: str, default: Any) -> Any:
    """A variant's setting as the type of its default."""
    if isinstance(default, bool):
        return value.lower() in ("1", "true", "yes", "on")
    return type(default)(value)


def user_of(question: dict[str, Any]) -> str:
    """The user whose memories are the question's haystack."""
    return f"lme-{question['question_id']}"


def run(
    data: list[dict[str, Any]],
    variants: list[tuple[str, dict[str, str]]],
    cache: EmbeddingCache | None,
    store: Path | None = None,
) -> dict[str, Any]:
    """Write every question's haystack once (or take it from ``store``, a folder an earlier run
    with the same ``store`` kept), then search it under each variant."""
    kept = [q for q in data if not q["question_id"].endswith("_abs")]
    work = Path(tempfile.mkdtemp(prefix="ccmem-longmemeval-"))
    if store is not None:
        store.mkdir(parents=True, exist_ok=True)
    runs = [("defaults", {}), *variants]
    rows: dict[str, list[tuple[str, dict[str, float]]]] = {label: [] for label, _ in runs}
    latencies: dict[str, list[float]] = {label: [] for label, _ in runs}
    halves: dict[str, list[str]] = {label: [] for label, _ in runs}
    total_turns = 0
    with cached_embeddings(cache):
        bench = Bench(store / "data" if store is not None else work / "data")
        try:
            started = time.perf_counter()
            written = bench.fill(kept, store)
            total_turns = sum(len(haystack(question)) for question in kept)
            ingest_seconds = time.perf_counter() - started
            for question in kept:
                answers = answer_sessions(question)
                now = moment(question["question_date"])
                for label, settings in runs:
                    ranked, elapsed = bench.search(user_of(question), question["question"], now, settings)
                    latencies[label].append(elapsed)
                    rows[label].append((question["question_type"], scored(ranked, answers)))
                    halves[label].append(half_of(question["question_id"]))
        finally:
            bench.close()
            shutil.rmtree(work, ignore_errors=True)
    report: dict[str, Any] = {
        "data": "longmemeval-dev",
        "questions": len(kept),
        "turns": total_turns,
        **({"ingest_per_s": round(written / max(ingest_seconds, 1e-9), 1)} if written else {}),
    }
    for label, settings in runs:
        report[label] = {
            **({"settings": settings} if settings else {}),
            **summary(rows[label]),
            "by_half": by_half(rows[label], halves[label]),
            "search": percentiles(latencies[label]) if latencies[label] else {},
        }
    return report


def commit() -> str:
    try:
        return subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--limit", type=int, help="only the first N questions (after abstentions)")
    parser.add_argument("--questions", help="only these question ids (comma-separated)")
    parser.add_argument("--per-type", type=int, help="only the first N questions of each type")
    parser.add_argument(
        "--variant",
        action="append",
        default=[],
        type=variant,
        metavar="LABEL:KEY=VALUE[,KEY=VALUE]",
        help="also search with these search.* settings (repeatable)",
    )
    parser.add_argument(
        "--half",
        choices=HALVES,
        help="only the questions tuned on (tune) or held out and only scored (score): by question id",
    )
    parser.add_argument("--no-cache", action="store_true", help="run the model for every text")
    parser.add_argument("--out", type=Path, help="also write the report here")
    parser.add_argument(
        "--store",
        type=Path,
        help="keep the written store in this folder and take it from there next time (same data)",
    )
    args = parser.parse_args()
    data = load(args.data)
    if args.questions:
        wanted = set(args.questions.split(","))
        data = [q for q in data if q["question_id"] in wanted]
    data = [q for q in data if not q["question_id"].endswith("_abs")]
    if args.half:
        data = [q for q in data if half_of(q["question_id"]) == args.half]
    if args.per_type:
        taken: dict[str, int] = {}
        kept = []
        for question in data:
            kind = question["question_type"]
            if taken.get(kind, 0) < args.per_type:
                taken[kind] = taken.get(kind, 0) + 1
                kept.append(question)
        data = kept
    if args.limit:
        data = data[: args.limit]
    cache = (
        None if args.no_cache else EmbeddingCache(Path(os.environ.get("CCMEM_BENCH_CACHE", DEFAULT_CACHE)))
    )
    report = {"commit": commit(), **run(data, args.variant, cache, args.store)}
    text = json.dumps(report, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
