"""Fault check: many writers of the same texts at the same moment. Prints JSON.

    .venv/bin/python -m bench.faults.concurrent_writers [--rounds 5] [--writers 20] [--texts 15] [--postgres]

Starts a server on 127.0.0.1 (stopped by PID at the end) on a temporary data directory; each
round, ``--writers`` threads wait at a barrier and then send the same ``--texts`` texts
(shuffled): odd writers one request a text (``POST /api/v1/memories``), even writers one batch
(``POST /api/v1/memories/batch``), as the audit did (it found 71 rows for 15 texts). After each
round it counts the rows per text through the listing and the hits per text through search
(an orphan vector would show as a second hit). ``--postgres`` runs the server on a throwaway
PostgreSQL cluster (Debian's ``postgresql`` package) instead of SQLite.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import random
import tempfile
import threading
from collections import Counter
from pathlib import Path
from typing import Any

import httpx

from tests.support.postgres import PostgresCluster
from tests.support.server import MemoryServer


def one_round(server: MemoryServer, token: str, texts: list[str], writers: int) -> Counter[int]:
    statuses: Counter[int] = Counter()
    lock = threading.Lock()
    barrier = threading.Barrier(writers)

    def writer(index: int) -> None:
        mine: Counter[int] = Counter()
        shuffled = random.Random(index).sample(texts, len(texts))
        with httpx.Client(
            base_url=server.base_url, headers={"Authorization": f"Bearer {token}"}, timeout=300
        ) as client:
            barrier.wait()
            if index % 2:
                mine.update(client.post("/api/v1/memories", json={"text": t}).status_code for t in shuffled)
            else:
                response = client.post(
                    "/api/v1/memories/batch", json={"items": [{"text": t} for t in shuffled]}
                )
                mine[response.status_code] += 1
                if response.status_code == 200:
                    mine.update(item.get("status", 200) for item in response.json()["results"])
        with lock:
            statuses.update(mine)

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(writers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return statuses


def counts(server: MemoryServer, token: str, texts: list[str]) -> tuple[Counter[str], Counter[str]]:
    with httpx.Client(
        base_url=server.base_url, headers={"Authorization": f"Bearer {token}"}, timeout=60
    ) as client:
        items: list[dict[str, Any]] = client.get("/api/v1/memories/", params={"size": 100}).json()["items"]
        rows = Counter(item["content"] for item in items)
        hits: Counter[str] = Counter()
        for text in texts:
            found = client.post("/api/v1/memories/search", json={"query": text, "limit": 50}).json()
            hits[text] = [hit["content"] for hit in found["results"]].count(text)
    return rows, hits


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--writers", type=int, default=20)
    parser.add_argument("--texts", type=int, default=15)
    parser.add_argument("--postgres", action="store_true")
    args = parser.parse_args()

    report: dict[str, Any] = {"database": "postgresql" if args.postgres else "sqlite", "rounds": []}
    with tempfile.TemporaryDirectory() as work, contextlib.ExitStack() as stack:
        env = {}
        if args.postgres:
            env["DATABASE_URL"] = stack.enter_context(PostgresCluster()).url
        server = stack.enter_context(MemoryServer(Path(work), env=env))
        for number in range(args.rounds):
            token = server.make_token(f"racer{number}")
            texts = [
                f"Round {number}, fact {n}: the cache lives in bucket {n * 7 + number}"
                for n in range(args.texts)
            ]
            statuses = one_round(server, token, texts, args.writers)
            rows, hits = counts(server, token, texts)
            report["rounds"].append(
                {
                    "statuses": dict(statuses),
                    "rows_stored": sum(rows.values()),
                    "duplicate_rows": sum(n - 1 for n in rows.values() if n > 1),
                    "texts_lost": sum(1 for text in texts if rows[text] == 0),
                    "duplicate_search_hits": sum(n - 1 for n in hits.values() if n > 1),
                }
            )
    rounds = report["rounds"]
    report["summary"] = {
        "writers": args.writers,
        "texts_per_round": args.texts,
        "responses_not_200": sum(n for r in rounds for status, n in r["statuses"].items() if status != 200),
        "duplicate_rows": sum(r["duplicate_rows"] for r in rounds),
        "texts_lost": sum(r["texts_lost"] for r in rounds),
        "duplicate_search_hits": sum(r["duplicate_search_hits"] for r in rounds),
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
