"""The hygiene job, measured. Prints JSON.

    .venv/bin/python -m bench.quality.hygiene [--quality-only] [--sizes 10000,100000]
        [--compare-exact] [--neighbour-sizes 10000,100000] [--exact-too] [--locomo]

1. Quality: the labelled corpus (tests/corpora/hygiene/labelled.jsonl, made by
   tests/corpora/hygiene_corpus.py) through the same scan the server runs
   (memories/hygiene/scan.py over the real ONNX embeddings), scored per proposal kind:
   precision and recall. Junk, superseded and stale are scored per memory (the one the proposal
   archives); duplicates per pair of memories put in one cluster.
2. Time: the server's job (``Hygiene.run``, in process) over n synthetic memories of one user
   (facts from the corpus's templates with numbers varied, plus junk and copies; loaded through
   the service first, which is not the job's time) for each size in --sizes, by step: load
   (SQL), vectors (the stored ones read), neighbours, rules, write (proposals), apply, with
   each run's peak resident memory and the load average; above neighbours.EXACT_UP_TO the
   clustered neighbours are checked against exact ones for 2,000 rows, and --compare-exact
   scans the store again comparing every pair and compares the proposals. And the
   nearest-neighbour step alone at --neighbour-sizes (--exact-too: against every pair, timed).
   The machine is shared: timings are noisy.
3. --locomo: LoCoMo recall before and after applying every proposal the job makes on a store of
   captured LoCoMo turns (bench/quality/hygiene_locomo.py, through the real server).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import tempfile
import time
import uuid
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
from sqlalchemy import insert, select, update

import claude_code_memory.engine  # noqa: F401 - first: it sets mem0's switches before mem0 loads
from claude_code_memory.config import load_settings
from claude_code_memory.db.models import Memory, MemoryAccessLog, utcnow
from claude_code_memory.domain.memory_state import MemoryState
from claude_code_memory.engine.embedder import OnnxMiniLmEmbedder
from claude_code_memory.memories.hygiene import neighbours as nb
from claude_code_memory.memories.hygiene.scan import KINDS, Item, Thresholds, scan
from claude_code_memory.memories.server_parts import ServerParts, hygiene_of
from claude_code_memory.policy.gate import content_hash
from claude_code_memory.store.vectors import point_payload
from tests.corpora import hygiene_corpus

NOW = datetime(2025, 6, 1, 12, 0, 0)
USER = "bench"


def reset_peak_rss() -> None:
    """Start the process's resident high-water mark (VmHWM) again from what it holds now."""
    Path("/proc/self/clear_refs").write_text("5")


def rss_mib(field: str) -> float:
    """``VmRSS`` (now) or ``VmHWM`` (peak since the last reset) in MiB, from /proc/self/status."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return round(int(line.split()[1]) / 1024, 1)
    raise LookupError(field)


def load_average() -> list[float]:
    return [round(value, 2) for value in os.getloadavg()]


def sampled_recall(
    unit: np.ndarray, found: nb.Neighbours, floor: float, sample: int, seed: int = 1
) -> dict[str, Any]:
    """What ``found`` (a clustered search) keeps of the exact neighbours of ``sample`` rows."""
    rng = np.random.default_rng(seed)
    rows = rng.choice(len(unit), min(sample, len(unit)), replace=False)
    exact = nb.exact(unit, floor, rows=rows)
    truth = sum(map(len, exact))
    kept = sum(
        len({c for c, _ in e} & {c for c, _ in found[row]}) for e, row in zip(exact, rows, strict=True)
    )
    same = sum(e == found[row] for e, row in zip(exact, rows, strict=True))
    return {
        "rows_checked": len(rows),
        "exact_pairs": truth,
        "pair_recall": round(kept / truth, 5) if truth else None,
        "rows_identical": round(same / len(rows), 5),
    }


def corpus_items(rows: list[dict[str, Any]]) -> list[Item]:
    return [
        Item(
            id=row["key"],
            text=row["text"],
            created_at=NOW - timedelta(days=row["age_days"], minutes=index),
            last_recalled=None
            if row["recalled_days_ago"] is None
            else NOW - timedelta(days=row["recalled_days_ago"]),
        )
        for index, row in enumerate(rows)
    ]


def _pr(found: set[Any], truth: set[Any]) -> dict[str, Any]:
    hit = len(found & truth)
    return {
        "precision": round(hit / len(found), 3) if found else None,
        "recall": round(hit / len(truth), 3) if truth else None,
        "proposed": len(found),
        "planted": len(truth),
        "correct": hit,
    }


def score(rows: list[dict[str, Any]], findings: list[Any]) -> dict[str, Any]:
    """Precision and recall per kind, and the wrong proposals by what they hit (to read)."""
    by_key = {row["key"]: row for row in rows}
    truth: dict[str, set[Any]] = {
        "junk": {r["key"] for r in rows if r["label"] == "junk"},
        "superseded": {r["key"] for r in rows if r["label"] == "superseded"},
        "stale": {r["key"] for r in rows if r["label"] == "stale"},
        "duplicate": set(),
    }
    groups: dict[str, list[str]] = {}
    for row in rows:
        if row["group"]:
            groups.setdefault(row["group"], []).append(row["key"])
    for members in groups.values():
        truth["duplicate"].update(frozenset(pair) for pair in itertools.combinations(members, 2))
    found: dict[str, set[Any]] = {kind: set() for kind in KINDS}
    for finding in findings:
        if finding.kind == "duplicate":
            found["duplicate"].update(frozenset(p) for p in itertools.combinations(finding.ids, 2))
        elif finding.kind == "superseded":
            found["superseded"].add(finding.ids[0])
        else:
            found[finding.kind].update(finding.ids)
    result: dict[str, Any] = {kind: _pr(found[kind], truth[kind]) for kind in KINDS}
    mistakes: dict[str, list[str]] = {}
    for kind in KINDS:
        for wrong in sorted(found[kind] - truth[kind], key=str)[:8]:
            keys = sorted(wrong) if isinstance(wrong, frozenset) else [wrong]
            mistakes.setdefault(f"{kind}_false_positive", []).append(
                " | ".join(f"{by_key[k]['text']} [{by_key[k]['label']}]" for k in keys)
            )
        for missed in sorted(truth[kind] - found[kind], key=str)[:8]:
            keys = sorted(missed) if isinstance(missed, frozenset) else [missed]
            mistakes.setdefault(f"{kind}_missed", []).append(" | ".join(by_key[k]["text"] for k in keys))
    result["examples_of_mistakes"] = mistakes
    return result


def quality(embedder: OnnxMiniLmEmbedder, thresholds: Thresholds) -> dict[str, Any]:
    rows = hygiene_corpus.load()
    items = corpus_items(rows)
    vectors = embedder.embed_batch([item.text for item in items])
    findings = scan(items, vectors, thresholds, NOW)
    return {"memories": len(rows), **score(rows, findings)}


def synthetic(count: int, seed: int = 7) -> list[Item]:
    """``count`` memories shaped like a captured store: mostly distinct facts, some junk, copies."""
    rng = random.Random(seed)
    rows = hygiene_corpus.load()
    texts = [row["text"] for row in rows]
    items = []
    for index in range(count):
        base = rng.choice(texts)
        roll = rng.random()
        if roll < 0.85:  # a distinct fact: the template's text with its own numbers and names
            ticket, service = rng.randint(1000, 99999), rng.choice(hygiene_corpus.SERVICES)
            text = f"{base.rstrip('.!')} (ticket {ticket}, {service})."
        else:
            text = base
        items.append(
            Item(
                id=f"m{index}",
                text=text,
                created_at=NOW - timedelta(days=rng.randint(1, 400), seconds=index),
                last_recalled=None if rng.random() < 0.5 else NOW - timedelta(days=rng.randint(0, 200)),
            )
        )
    return items


def bulk_load(parts: ServerParts, items: list[Item]) -> dict[str, Item]:
    """Store ``items`` as one user's active memories, fast: the first through the service (it
    makes the user and the app), the rest embedded by the same embedder and written straight
    to the vector store and SQLite in bulk (the service's one-by-one path, gate and history
    included, takes ~70 ms a memory on this machine). Exact copies are stored once, as the
    service's unique ``(user, content hash)`` would. Returns memory id -> item."""
    service = parts.service
    first = service.writes.add_memories(user_id=USER, app_name="bench", items=[{"text": items[0].text}])
    first_id = first[0]["results"][0]["id"]
    with service.database.session() as session:
        row = session.get(Memory, uuid.UUID(first_id))
        assert row is not None
        user_pk, app_id = row.user_id, row.app_id
    stored: dict[str, Item] = {first_id: items[0]}
    seen = {items[0].text}
    rest = []
    for item in items[1:]:
        if item.text not in seen:
            seen.add(item.text)
            rest.append(item)
    for start in range(0, len(rest), 500):
        chunk = rest[start : start + 500]
        vectors = service.vectors.embed_batch([item.text for item in chunk])
        chunk_ids = [str(uuid.uuid4()) for _ in chunk]
        now = utcnow()
        payload = point_payload(
            app_name="bench", app_id=str(app_id), state=MemoryState.active, channel="rest", created_at=now
        )
        parts.engine.store.insert(
            vectors=vectors, payloads=[{**payload, "user_id": USER} for _ in chunk], ids=chunk_ids
        )
        with service.database.session() as session:
            session.execute(
                insert(Memory),
                [
                    {
                        "id": uuid.UUID(mid),
                        "user_id": user_pk,
                        "app_id": app_id,
                        "content": item.text,
                        "content_hash": content_hash(item.text),
                        "metadata_": {},
                        "state": MemoryState.active,
                        "channel": "rest",
                        "created_at": now,
                        "updated_at": now,
                    }
                    for mid, item in zip(chunk_ids, chunk, strict=True)
                ],
            )
        stored.update(zip(chunk_ids, chunk, strict=True))
    return stored


def job_timing(size: int, thresholds: Thresholds, compare_exact: bool = False) -> dict[str, Any]:
    """The server's job (memories/hygiene/proposals.py ``Hygiene.run``) over ``size`` synthetic memories
    of one user, in process on a temporary data directory: loaded by :func:`bulk_load` (timed
    apart, not the job), their ages and recalls set in SQL,
    then the job run twice: the first stores every proposal, the second (the schedule's steady
    state) finds the same and stores none. Each run's peak resident memory (VmHWM, reset before
    it) and the load average around it are reported. Then the stored vectors are read again
    and, above ``neighbours.EXACT_UP_TO``, the clustered neighbours checked against exact ones
    for 2,000 rows; with ``compare_exact`` the whole scan is run a second time with every pair
    compared, and the two sets of proposals compared."""
    items = synthetic(size)
    shift = utcnow() - NOW  # the job's clock is the real one
    with tempfile.TemporaryDirectory(prefix="ccmem-hygiene-") as tmp:
        settings = load_settings(
            config_path=None,
            environ={},
            overrides={
                "server.data_dir": str(Path(tmp) / "data"),
                "storage.auto_reclaim": False,
                "hygiene.schedule_hours": 0,
                "hygiene.duplicate_similarity": thresholds.duplicate_similarity,
                "hygiene.supersede_similarity": thresholds.supersede_similarity,
                "hygiene.stale_days": thresholds.stale_days,
                # The whole store: the server reads a user's newest hygiene.max_memories.
                "hygiene.max_memories": max(size * 2, 100),
            },
        )
        parts = ServerParts(settings)
        service = parts.service
        try:
            started = time.perf_counter()
            ids = bulk_load(parts, items)
            loaded = time.perf_counter() - started
            with service.database.session() as session:
                session.execute(
                    update(Memory),
                    [
                        {"id": uuid.UUID(mid), "created_at": item.created_at + shift}
                        for mid, item in ids.items()
                    ],
                )
                apps = dict(session.execute(select(Memory.id, Memory.app_id)).all())
                session.execute(
                    insert(MemoryAccessLog),
                    [
                        {
                            "memory_id": uuid.UUID(mid),
                            "app_id": apps[uuid.UUID(mid)],
                            "accessed_at": item.last_recalled + shift,
                            "access_type": "search",
                            "metadata_": {},
                        }
                        for mid, item in ids.items()
                        if item.last_recalled is not None
                    ],
                )
            hygiene = hygiene_of(service)
            runs = []
            for _ in range(2):
                held, load_before = rss_mib("VmRSS"), load_average()
                reset_peak_rss()
                report = hygiene.run(USER).to_dict()
                report.pop("finished_at", None)
                report["rss_mib_before"], report["peak_rss_mib"] = held, rss_mib("VmHWM")
                report["load_average_before_after"] = [load_before, load_average()]
                runs.append(report)
            checks = neighbour_checks(service, ids, shift, thresholds, compare_exact)
        finally:
            parts.close()
    return {
        "memories": len(ids),
        "load_seconds_not_the_job": round(loaded, 1),
        "first_run": runs[0],
        "second_run": runs[1],
        "neighbours_checked": checks,
    }


def neighbour_checks(
    service: Any, ids: dict[str, Item], shift: timedelta, thresholds: Thresholds, compare_exact: bool
) -> dict[str, Any]:
    """The job's neighbours against exact ones, on the store's own vectors (see job_timing)."""
    floor = min(thresholds.duplicate_similarity, thresholds.supersede_similarity)
    ordered = sorted(ids, key=lambda mid: ids[mid].created_at)
    vectors, _ = service.vectors.stored_or_embedded(ordered, [ids[mid].text for mid in ordered])
    unit = nb.unit_rows(np.asarray(vectors, dtype=np.float32))
    out: dict[str, Any] = {"exact_up_to": nb.EXACT_UP_TO, "path": "exact"}
    if len(unit) > nb.EXACT_UP_TO:
        started = time.perf_counter()
        found = nb.clustered(unit, floor)
        out |= {"path": "clustered", "clustered_seconds": round(time.perf_counter() - started, 1)}
        out |= {"load_average": load_average(), **sampled_recall(unit, found, floor, 2000)}
    if compare_exact:
        items = [
            Item(
                mid,
                ids[mid].text,
                ids[mid].created_at + shift,
                None if ids[mid].last_recalled is None else ids[mid].last_recalled + shift,
            )
            for mid in ordered
        ]
        now = utcnow()
        seconds: dict[str, float] = {}
        default = scan(items, vectors, thresholds, now, seconds)
        limit = nb.EXACT_UP_TO
        nb.EXACT_UP_TO = len(items)  # every pair
        try:
            every_pair: dict[str, float] = {}
            exact = scan(items, vectors, thresholds, now, every_pair)
        finally:
            nb.EXACT_UP_TO = limit

        def proposals(findings: list[Any]) -> set[tuple[Any, ...]]:
            return {(f.kind, tuple(f.ids), f.keep) for f in findings}

        a, b = proposals(default), proposals(exact)
        out["scan_compared"] = {
            "neighbours_seconds": round(seconds["neighbours"], 1),
            "neighbours_seconds_every_pair": round(every_pair["neighbours"], 1),
            "load_average": load_average(),
            "proposals": len(a),
            "proposals_every_pair": len(b),
            "only_in_default": len(a - b),
            "only_with_every_pair": len(b - a),
            "examples_only_with_every_pair": [list(x) for x in sorted(b - a)[:5]],
        }
    return out


def neighbours_timing(size: int, exact_too: bool, seed: int = 3) -> dict[str, Any]:
    """The nearest-neighbour step alone on ``size`` random unit vectors, one in five a near copy
    of another (the step's cost hardly depends on the texts): the search the job uses at this
    size, checked against exact neighbours for 2,000 rows; with ``exact_too`` also every pair
    (the search below ``neighbours.EXACT_UP_TO``), timed."""
    rng = np.random.default_rng(seed)
    vectors = rng.normal(0, 1, (size, 384)).astype(np.float32)
    copies = size // 5
    vectors[:copies] = vectors[size - copies :] + rng.normal(0, 0.3, (copies, 384)).astype(np.float32)
    floor = min(Thresholds.duplicate_similarity, Thresholds.supersede_similarity)
    unit = nb.unit_rows(vectors)
    out: dict[str, Any] = {"memories": size, "load_average_before": load_average()}
    started = time.perf_counter()
    found = nb.neighbours(unit, floor)
    out["seconds"] = round(time.perf_counter() - started, 1)
    out["path"] = "exact" if size <= nb.EXACT_UP_TO else "clustered"
    out["pairs_found"] = sum(map(len, found))
    if size > nb.EXACT_UP_TO:
        out |= sampled_recall(unit, found, floor, 2000)
    if exact_too:
        started = time.perf_counter()
        exact = nb.exact(unit, floor)
        out["exact_seconds"] = round(time.perf_counter() - started, 1)
        # Neighbour by neighbour; a similarity may differ in its last (fourth) place where the
        # two products' float rounding falls either side of a rounding step.
        out["rows_with_other_neighbours"] = sum(
            [c for c, _ in e] != [c for c, _ in f] for e, f in zip(exact, found, strict=True)
        )
        out["largest_similarity_difference"] = max(
            (
                abs(a - b)
                for e, f in zip(exact, found, strict=True)
                for (_, a), (_, b) in zip(e, f, strict=False)
            ),
            default=0.0,
        )
    out["load_average_after"] = load_average()
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quality-only", action="store_true")
    parser.add_argument("--sizes", default="10000", help="the job, in process, at these sizes")
    parser.add_argument(
        "--neighbour-sizes", default="", help="the nearest-neighbour step alone at these sizes"
    )
    parser.add_argument(
        "--exact-too", action="store_true", help="--neighbour-sizes: also compare every pair (slow at 100k)"
    )
    parser.add_argument(
        "--compare-exact",
        action="store_true",
        help="--sizes: scan the stored memories again comparing every pair; compare the proposals",
    )
    parser.add_argument("--duplicate-similarity", type=float, default=Thresholds.duplicate_similarity)
    parser.add_argument("--supersede-similarity", type=float, default=Thresholds.supersede_similarity)
    parser.add_argument("--locomo", action="store_true", help="LoCoMo recall before and after")
    args = parser.parse_args()
    thresholds = Thresholds(
        duplicate_similarity=args.duplicate_similarity, supersede_similarity=args.supersede_similarity
    )
    embedder = OnnxMiniLmEmbedder(cache_size=0)
    report: dict[str, Any] = {"thresholds": thresholds.__dict__, "quality": quality(embedder, thresholds)}
    if not args.quality_only:
        report["timing"] = [
            job_timing(int(size), thresholds, args.compare_exact) for size in args.sizes.split(",") if size
        ]
        report["neighbours_timing"] = [
            neighbours_timing(int(size), args.exact_too) for size in args.neighbour_sizes.split(",") if size
        ]
        report["timing_note"] = "2 shared cores; other jobs ran at the same time: noisy"
    if args.locomo:
        from bench.quality.hygiene_locomo import run as locomo_run

        report["locomo"] = locomo_run()
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
