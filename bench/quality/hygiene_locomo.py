"""LoCoMo recall before and after the hygiene job, every proposal approved. Prints JSON.

    .venv/bin/python -m bench.quality.hygiene_locomo [--data ../shared/bench/locomo-dev.json]

Starts the real server (bench.harness.server.Server) with a temporary data directory and stores every
turn of each development-split conversation as a captured memory of its own user, exactly as
bench/quality/locomo.py does (``Speaker: text``, the session as ``conversation_id``, its date as
``captured_at``). Then:

1. before: every question of categories 1-4 through ``POST /api/v1/memories/search``, scored as
   bench/quality/locomo.py scores (turn level: recall_any@{1,5,10,20}, recall_all@10, MRR), then the
   same again with nothing changed (what the searches themselves move: the noise floor);
2. ``POST /api/v1/hygiene/run`` (admin: every user), then every open proposal of every user
   approved through ``POST /api/v1/hygiene/approve`` unedited — what a user who approves
   everything gets, the worst case;
3. after: the same questions again, after each kind is applied (junk, duplicate, stale,
   superseded; cumulative) and at the end, with every question whose first evidence rank moved.
   Archived evidence turns are counted per conversation (LoCoMo repeats turn ids across them).

Two scores after: ``strict`` (a hit only on the evidence turn's own memory, as bench/quality/locomo.py)
and ``merge_aware`` (an applied duplicate merge's kept memory also stands for the turns it
absorbed: it says the same thing). The before-searches are recorded in the access log, so they
count as recalls for the stale rule; the turns are written now (``created_at``; the session date
is ``captured_at``), so nothing is older than ``hygiene.stale_days`` here anyway.

Only the development split is used (see ../shared/bench/README.md; LoCoMo is CC BY-NC 4.0 test
data, not part of this repository).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import httpx

from bench.harness.paths import ROOT
from bench.harness.server import Server
from bench.quality.locomo import DEFAULT_DATA, KS, ingest, questions, turns

#: The order proposals are approved in, recall measured after each kind.
APPLY_ORDER = ("junk", "duplicate", "stale", "superseded")


def score(
    client: httpx.Client,
    asked: list[tuple[str, dict[str, Any]]],
    dia_of: dict[str, set[str]],
    limit: int = 20,
    ranks: list[int | None] | None = None,
) -> dict[str, Any]:
    """bench/quality/locomo.py's metrics; ``dia_of`` maps a memory id to the turns it stands for.
    ``ranks``, if given, gets each question's first evidence rank (1-based; None: not in the
    top ``limit``), in the order asked."""
    hits_at = dict.fromkeys(KS, 0)
    all_at_10 = 0
    reciprocal = 0.0
    for user, qa in asked:
        response = client.post(
            "/api/v1/memories/search",
            json={"user_id": user, "query": qa["question"], "limit": limit, "app": "locomo"},
        )
        response.raise_for_status()
        ranked = [dia_of.get(r["id"], set()) for r in response.json()["results"]]
        evidence = set(qa["evidence"])

        def covered(k: int, ranked: list[set[str]] = ranked) -> set[str]:
            return set().union(*ranked[:k]) if ranked[:k] else set()

        for k in KS:
            hits_at[k] += bool(evidence & covered(k))
        all_at_10 += evidence <= covered(10)
        first = next((i for i, d in enumerate(ranked) if d & evidence), None)
        reciprocal += 0 if first is None else 1 / (first + 1)
        if ranks is not None:
            ranks.append(None if first is None else first + 1)
    n = len(asked)
    return {
        **{f"recall_any@{k}": round(hits_at[k] / n, 4) for k in KS},
        "recall_all@10": round(all_at_10 / n, 4),
        "mrr": round(reciprocal / n, 4),
    }


def dia_label(dia_of: dict[str, set[str]], memory_id: str) -> str:
    return ",".join(sorted(dia_of.get(memory_id, {"?"})))


def proposals(client: httpx.Client, user: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    page = 1
    while True:
        response = client.get(
            "/api/v1/hygiene/proposals", params={"user_id": user, "status": "open", "size": 100, "page": page}
        )
        response.raise_for_status()
        body = response.json()
        found.extend(body["items"])
        if page >= body["pages"]:
            return found
        page += 1


def run(data_path: Path = DEFAULT_DATA, settings: dict[str, str] | None = None) -> dict[str, Any]:
    data = json.loads(data_path.read_text())
    # No scheduled run (its first comes a minute after start-up, during the before-searches).
    settings = {"hygiene.schedule_hours": "0", **(settings or {})}
    server = Server(settings=settings, code=ROOT)
    try:
        with httpx.Client(
            base_url=server.base, headers={"Authorization": f"Bearer {server.admin}"}, timeout=600
        ) as client:
            asked: list[tuple[str, dict[str, Any]]] = []
            dia_of: dict[str, set[str]] = {}
            user_of: dict[str, str] = {}
            users = []
            n_turns = 0
            for number, conversation in enumerate(data):
                user = f"locomo-{number}"
                users.append(user)
                items = turns(conversation)
                n_turns += len(items)
                for memory_id, dia in ingest(client, user, items).items():
                    dia_of[memory_id] = {dia}
                    user_of[memory_id] = user
                asked.extend((user, qa) for qa in questions(conversation, {t["dia_id"] for t in items}))
            ranks_before: list[int | None] = []
            before = score(client, asked, dia_of, ranks=ranks_before)
            # The same searches again, nothing changed: how much the searches themselves (their
            # access log) move the ranking, the noise floor of the comparison.
            before_again = score(client, asked, dia_of)

            started = time.perf_counter()
            job = client.post("/api/v1/hygiene/run", json={})
            job.raise_for_status()
            job_seconds = time.perf_counter() - started

            by_kind: dict[str, dict[str, int]] = {}
            archived_dias: dict[str, list[str]] = {}
            merged = {key: set(value) for key, value in dia_of.items()}
            failed: list[str] = []
            examples: dict[str, list[str]] = {}
            open_ = [proposal for user in users for proposal in proposals(client, user)]
            # Kind by kind, scored after each (cumulative): which kind costs recall, if any.
            after_each: dict[str, dict[str, Any]] = {}
            for kind in APPLY_ORDER:
                of_kind = [proposal for proposal in open_ if proposal["kind"] == kind]
                if not of_kind:
                    continue
                for start in range(0, len(of_kind), 500):
                    chunk = of_kind[start : start + 500]
                    response = client.post("/api/v1/hygiene/approve", json={"ids": [p["id"] for p in chunk]})
                    response.raise_for_status()
                    outcomes = {r["id"]: r for r in response.json()["results"]}
                    for proposal in chunk:
                        counts = by_kind.setdefault(kind, {"proposed": 0, "applied": 0})
                        counts["proposed"] += 1
                        if not outcomes[proposal["id"]]["ok"]:
                            failed.append(outcomes[proposal["id"]].get("error", "?"))
                            continue
                        counts["applied"] += 1
                        keep = proposal["keep_id"]
                        preview = proposal["preview"] or {}
                        shown = " | ".join(
                            f"{dia_label(dia_of, entry['id'])} {entry['text']}"
                            for entry in [*preview.get("archive", []), *[preview.get("keep") or {}]]
                            if entry
                        )
                        examples.setdefault(kind, []).append(shown)
                        for mid in proposal["memory_ids"]:
                            if mid == keep:
                                continue
                            archived_dias.setdefault(kind, []).extend(
                                f"{user_of[mid]}/{dia}" for dia in sorted(dia_of.get(mid, ()))
                            )
                            if kind == "duplicate" and keep is not None:
                                merged[keep] = merged.get(keep, set()) | dia_of.get(mid, set())
                after_each[f"+{kind}"] = score(client, asked, dia_of)
            evidence = {f"{user}/{e}" for user, qa in asked for e in qa["evidence"]}
            ranks_after: list[int | None] = []
            after_strict = score(client, asked, dia_of, ranks=ranks_after)
            moved = [
                {
                    "user": user,
                    "question": qa["question"],
                    "evidence": qa["evidence"],
                    "rank_before": was,
                    "rank_after": now,
                }
                for (user, qa), was, now in zip(asked, ranks_before, ranks_after, strict=True)
                if was != now
            ]
            after_merge_aware = score(client, asked, merged)
        return {
            "data": data_path.name,
            "conversations": len(data),
            "turns": n_turns,
            "questions": len(asked),
            "settings": settings,
            "before": before,
            "before_searched_again": before_again,
            "after": {"strict": after_strict, "merge_aware": after_merge_aware},
            "after_each_kind_strict_cumulative": after_each,
            "job": job.json(),
            "job_request_seconds": round(job_seconds, 2),
            "proposals_by_kind": by_kind,
            "approve_failures": failed[:10],
            "proposals": examples,
            "archived_turns": {kind: len(dias) for kind, dias in archived_dias.items()},
            "archived_evidence_turns": {
                kind: sorted(set(dias) & evidence) for kind, dias in archived_dias.items()
            },
            "questions_whose_first_evidence_rank_moved": moved,
        }
    finally:
        server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    args = parser.parse_args()
    print(json.dumps(run(args.data), indent=2))


if __name__ == "__main__":
    main()
