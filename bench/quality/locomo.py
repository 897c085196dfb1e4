"""Retrieval benchmark on LoCoMo through the public REST API. Prints JSON.

    .venv/bin/python -m bench.quality.locomo [--data ../shared/bench/locomo-dev.json] [--compare-plain]
        [--plain] [--variant LABEL:KEY=VALUE[,KEY=VALUE...]]... [--half tune|score]

Starts the real server with a temporary data directory, stores every dialog turn of each
conversation as one memory of its own user (one user per conversation; the dialog id, speaker
and session date in metadata; `Speaker: text` as content, with an image caption appended when
the turn shares an image; the session as `conversation_id` and its date as `captured_at`), then
asks every question of categories 1-4 through `POST /api/v1/memories/search` and scores, at
turn level: recall_any@{1,5,10,20} (any evidence turn in the top k), recall_all@10 (every
evidence turn in the top 10), MRR (overall and by conversation), search latency p50/p95 and ingest
rate. Evidence ids are
parsed with `D\\d+:\\d+` and kept only when the turn exists (the data has a few malformed
evidence strings). `--compare-plain` runs a second server side by side with the turns stored
without conversation id and time; each ``--variant`` runs one more server side by side with
those config settings (``--variant no-lift:search.conversation_share=0``), so a ranking change
is measured against the default on the same data in one run. ``--plain`` stores the turns
without conversation id and time in every server (the default and each variant): how a
ranking change does on memories that belong to no conversation. ``--half score`` keeps only the
last conversation of the file (held out of tuning: ranking changes are chosen on ``--half
tune``, the others, and this half is only scored; :func:`half`).

LoCoMo's questions carry no date of their own; they were written about the whole conversation,
so each is asked as it ends: the search's ``now`` is the time of the conversation's last turn
(``--asked-at end``, the default; relative dates such as "recently" or "4 years ago" count back
from there). ``--asked-at clock`` sends no ``now``: the server's clock, as for a caller that
passes none (before search took a ``now``, the server read relative dates against the newest
memory, which here is the same last turn).

The data (LoCoMo, Maharana et al., ACL 2024; CC BY-NC 4.0) is test data and is not part of this
repository; see ../shared/bench/README.md.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import httpx

from bench.harness.paths import ROOT
from bench.harness.server import Server
from bench.harness.stats import percentiles

#: The shared data beside the checkout (a worktree's is a level further up).
DEFAULT_DATA = next(
    (
        folder / "shared" / "bench" / "locomo-dev.json"
        for folder in ROOT.parents
        if (folder / "shared" / "bench" / "locomo-dev.json").exists()
    ),
    ROOT.parent / "shared" / "bench" / "locomo-dev.json",
)
EVIDENCE = re.compile(r"D\d+:\d+")
KS = (1, 5, 10, 20)


def session_time(raw: str) -> datetime | None:
    """LoCoMo's session date ("1:56 pm on 8 May, 2023") as a datetime, or None."""
    try:
        return datetime.strptime(raw.strip(), "%I:%M %p on %d %B, %Y")
    except ValueError:
        return None


def turns(conversation: dict[str, Any]) -> list[dict[str, Any]]:
    """Every dialog turn with its session (number and date), in order. A turn's time is its
    session's start plus its position in seconds, so turns keep their order."""
    body = conversation["conversation"]
    out = []
    session = 1
    while f"session_{session}" in body:
        date = body.get(f"session_{session}_date_time", "")
        start = session_time(date)
        for position, turn in enumerate(body[f"session_{session}"]):
            text = f"{turn['speaker']}: {turn['text']}"
            if turn.get("blip_caption"):
                text += f" [shares an image: {turn['blip_caption']}]"
            out.append(
                {
                    "dia_id": turn["dia_id"],
                    "text": text,
                    "speaker": turn["speaker"],
                    "date": date,
                    "session": session,
                    "at": (start + timedelta(seconds=position)).isoformat() if start else None,
                }
            )
        session += 1
    return out


def questions(conversation: dict[str, Any], known: set[str]) -> list[dict[str, Any]]:
    kept = []
    for qa in conversation["qa"]:
        if qa.get("category") not in (1, 2, 3, 4):
            continue
        evidence = sorted({e for raw in qa.get("evidence", []) for e in EVIDENCE.findall(raw) if e in known})
        if evidence:
            kept.append({"question": qa["question"], "evidence": evidence, "category": qa["category"]})
    return kept


def ingest(
    client: httpx.Client, user: str, items: list[dict[str, Any]], provenance: bool = True
) -> dict[str, str]:
    """Store the turns; returns memory id → dialog id. With ``provenance``, each turn carries its
    conversation (the session) and when it was said, as a capture would."""
    by_memory: dict[str, str] = {}
    for start in range(0, len(items), 200):
        chunk = items[start : start + 200]
        response = client.post(
            "/api/v1/memories/batch",
            json={
                "user_id": user,
                "app": "locomo",
                "items": [
                    {
                        "text": t["text"],
                        "metadata": {"dia_id": t["dia_id"], "speaker": t["speaker"], "date": t["date"]},
                        **(
                            {"conversation_id": f"{user}-session-{t['session']}", "captured_at": t["at"]}
                            if provenance
                            else {}
                        ),
                    }
                    for t in chunk
                ],
            },
        )
        response.raise_for_status()
        for turn, outcome in zip(chunk, response.json()["results"], strict=True):
            for result in outcome.get("results", []):
                if result.get("event") == "ADD":
                    by_memory[result["id"]] = turn["dia_id"]
    return by_memory


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--limit", type=int, default=20, help="results per query (max k)")
    parser.add_argument(
        "--compare-plain",
        action="store_true",
        help="also run with turns stored without conversation id and time (side by side)",
    )
    parser.add_argument(
        "--plain",
        action="store_true",
        help="store the turns without conversation id and time in every server",
    )
    parser.add_argument(
        "--asked-at",
        choices=["end", "clock"],
        default="end",
        help="each question's now: its conversation's last turn (end) or the server's clock",
    )
    parser.add_argument(
        "--variant",
        action="append",
        default=[],
        type=variant,
        metavar="LABEL:KEY=VALUE[,KEY=VALUE]",
        help="also run a server with these config settings (repeatable)",
    )
    parser.add_argument(
        "--half",
        choices=HALVES,
        help="only the conversations tuned on (tune: all but the last) or held out (score: the last)",
    )
    args = parser.parse_args()
    data = half(json.loads(args.data.read_text()), args.half)
    provenance = not args.plain
    asked_at_end = args.asked_at == "end"
    report = run(data, args.data.name, args.limit, provenance, asked_at_end=asked_at_end)
    if args.compare_plain or args.variant:
        report = {"with_provenance" if provenance else "plain_defaults": report}
        if args.compare_plain and provenance:
            report["plain"] = run(data, args.data.name, args.limit, False, asked_at_end=asked_at_end)
        for label, settings in args.variant:
            report[label] = {
                "settings": settings,
                **run(data, args.data.name, args.limit, provenance, settings, asked_at_end=asked_at_end),
            }
    print(json.dumps(report, indent=2))


#: The halves of a development split: the part a change may be tuned on, and the part held out
#: of tuning and only scored (a check of how far the tuning carries).
HALVES = ("tune", "score")


def half(data: list[dict[str, Any]], which: str | None) -> list[dict[str, Any]]:
    """The conversations of one half (None: all). The last conversation of the file is held
    out (``score``), the others are tuned on (``tune``): a fixed rule, set before any result
    was seen, that holds whole conversations out as an outside check does. A file of one
    conversation has nothing to tune on."""
    if which is None:
        return data
    return data[-1:] if which == "score" else data[:-1]


def variant(raw: str) -> tuple[str, dict[str, str]]:
    """``LABEL:KEY=VALUE[,KEY=VALUE]`` as the label and its settings."""
    label, _, pairs = raw.partition(":")
    settings = dict(pair.split("=", 1) for pair in pairs.split(",") if "=" in pair)
    if not label or not settings or len(settings) != len(pairs.split(",")):
        raise argparse.ArgumentTypeError(f"expected LABEL:KEY=VALUE[,KEY=VALUE], got {raw!r}")
    return label, settings


def run(
    data: list[dict[str, Any]],
    name: str,
    limit: int,
    provenance: bool,
    settings: dict[str, str] | None = None,
    *,
    asked_at_end: bool = True,
) -> dict[str, Any]:
    server = Server(settings=settings)
    try:
        hits_at = {k: 0 for k in KS}
        all_at_10 = 0
        reciprocal = 0.0
        latencies: list[float] = []
        per_category: dict[int, list[int]] = {}
        # How much the score moves from one conversation to the next: a guide to how far a
        # conversation outside the development split may land from the mean.
        per_conversation: dict[str, list[int]] = {}
        reciprocal_by_conversation: dict[str, list[float]] = {}
        reciprocal_by_category: dict[int, list[float]] = {}
        total_turns = 0
        ingest_seconds = 0.0
        n_questions = 0
        with httpx.Client(
            base_url=server.base, headers={"Authorization": f"Bearer {server.admin}"}, timeout=120
        ) as c:
            for number, conversation in enumerate(data):
                user = f"locomo-{number}"
                items = turns(conversation)
                total_turns += len(items)
                started = time.perf_counter()
                by_memory = ingest(c, user, items, provenance)
                ingest_seconds += time.perf_counter() - started
                times = [t["at"] for t in items if t["at"]]
                asked = {"now": max(times)} if asked_at_end and provenance and times else {}
                for qa in questions(conversation, {t["dia_id"] for t in items}):
                    started = time.perf_counter()
                    body = {"user_id": user, "query": qa["question"], "limit": limit, "app": "locomo"}
                    response = c.post("/api/v1/memories/search", json=body | asked)
                    latencies.append(time.perf_counter() - started)
                    response.raise_for_status()
                    ranked = [by_memory.get(r["id"]) for r in response.json()["results"]]
                    evidence = set(qa["evidence"])
                    n_questions += 1
                    for k in KS:
                        hits_at[k] += bool(evidence & set(ranked[:k]))
                    all_at_10 += evidence <= set(ranked[:10])
                    first = next((i for i, d in enumerate(ranked) if d in evidence), None)
                    reciprocal += 0 if first is None else 1 / (first + 1)
                    found = int(bool(evidence & set(ranked[:10])))
                    per_category.setdefault(qa["category"], []).append(found)
                    reciprocal_by_category.setdefault(qa["category"], []).append(
                        0 if first is None else 1 / (first + 1)
                    )
                    per_conversation.setdefault(str(conversation.get("sample_id", number)), []).append(found)
                    reciprocal_by_conversation.setdefault(
                        str(conversation.get("sample_id", number)), []
                    ).append(0 if first is None else 1 / (first + 1))
        return {
            "data": name,
            "provenance": provenance,
            "asked_at": "end" if asked and asked_at_end else "clock",
            "conversations": len(data),
            "turns": total_turns,
            "questions": n_questions,
            **{f"recall_any@{k}": round(hits_at[k] / n_questions, 4) for k in KS},
            "recall_all@10": round(all_at_10 / n_questions, 4),
            "mrr": round(reciprocal / n_questions, 4),
            "recall_any@10_by_category": {
                str(cat): round(statistics.mean(v), 4) for cat, v in sorted(per_category.items())
            },
            "mrr_by_category": {
                str(cat): round(statistics.mean(v), 4) for cat, v in sorted(reciprocal_by_category.items())
            },
            "recall_any@10_by_conversation": {
                conv: round(statistics.mean(v), 4) for conv, v in per_conversation.items()
            },
            "mrr_by_conversation": {
                conv: round(statistics.mean(v), 4) for conv, v in reciprocal_by_conversation.items()
            },
            "search": percentiles(latencies),
            "ingest_per_s": round(total_turns / ingest_seconds, 1),
        }
    finally:
        server.stop()


if __name__ == "__main__":
    main()
