"""The hygiene job, measured. Prints JSON.

    .venv/bin/python bench/bench_hygiene.py [--quality-only] [--sizes 10000,100000] [--locomo]

1. Quality: the labelled corpus (tests/corpora/hygiene/labelled.jsonl, made by
   tests/corpora/hygiene_corpus.py) through the same scan the server runs
   (memories/hygiene_scan.py over the real ONNX embeddings), scored per proposal kind:
   precision and recall. Junk, superseded and stale are scored per memory (the one the proposal
   archives); duplicates per pair of memories put in one cluster.
2. Time: the scan over n synthetic memories (facts from the corpus's templates with numbers
   varied, plus junk and copies) for each size in --sizes, embedding and detection timed apart.
   The machine is shared: timings are noisy.
3. --locomo: LoCoMo recall before and after applying every proposal the job makes on a store of
   captured LoCoMo turns (through the real server; see bench_locomo.py for the data).
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
import sys
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from claude_code_memory.engine.embedder import OnnxMiniLmEmbedder  # noqa: E402
from claude_code_memory.memories.hygiene_scan import KINDS, Item, Thresholds, scan  # noqa: E402
from tests.corpora import hygiene_corpus  # noqa: E402

NOW = datetime(2025, 6, 1, 12, 0, 0)


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


def timing(embedder: OnnxMiniLmEmbedder, size: int, thresholds: Thresholds) -> dict[str, Any]:
    items = synthetic(size)
    started = time.perf_counter()
    vectors = embedder.embed_batch([item.text for item in items])
    embedded = time.perf_counter()
    findings = scan(items, vectors, thresholds, NOW)
    done = time.perf_counter()
    counts: dict[str, int] = {}
    for finding in findings:
        counts[finding.kind] = counts.get(finding.kind, 0) + 1
    return {
        "memories": size,
        "embed_seconds": round(embedded - started, 1),
        "scan_seconds": round(done - embedded, 1),
        "total_seconds": round(done - started, 1),
        "proposals": counts,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quality-only", action="store_true")
    parser.add_argument("--sizes", default="10000")
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
        report["timing"] = [timing(embedder, int(size), thresholds) for size in args.sizes.split(",")]
        report["timing_note"] = "2 shared cores; other jobs ran at the same time: noisy"
    if args.locomo:
        from bench_hygiene_locomo import run as locomo_run

        report["locomo"] = locomo_run()
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
