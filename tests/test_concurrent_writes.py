"""De-duplication under concurrency: many writers of the same texts at the same moment.

The audit sent the same 15 texts from 20 REST writers at once (single and batch routes) and
found 71 rows instead of 15. The database now decides (a unique index on the user and the
text's hash): every writer gets a 200, and each text is stored exactly once — on SQLite and
on PostgreSQL.
"""

from __future__ import annotations

import random
import threading
from collections import Counter
from typing import Any

import httpx
import pytest

from tests.support.server import MemoryServer

WRITERS = 20
TEXTS = [f"Concurrent fact number {n}: the build cache lives in bucket {n * 7}" for n in range(15)]


def _write_at_once(server: MemoryServer, token: str) -> list[int]:
    """Each writer sends every text (shuffled), half one by one, half as one batch, all
    starting together; returns every status code."""
    statuses: list[int] = []
    lock = threading.Lock()
    start = threading.Barrier(WRITERS)

    def writer(index: int) -> None:
        texts = random.Random(index).sample(TEXTS, len(TEXTS))
        mine: list[int] = []
        with httpx.Client(
            base_url=server.base_url, headers={"Authorization": f"Bearer {token}"}, timeout=120
        ) as client:
            start.wait()
            if index % 2:
                mine += [client.post("/api/v1/memories", json={"text": t}).status_code for t in texts]
            else:
                response = client.post("/api/v1/memories/batch", json={"items": [{"text": t} for t in texts]})
                mine.append(response.status_code)
                if response.status_code == 200:
                    mine += [item.get("status", 200) for item in response.json()["results"]]
        with lock:
            statuses.extend(mine)

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(WRITERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    return statuses


def _stored(server: MemoryServer, token: str) -> Counter[str]:
    with httpx.Client(
        base_url=server.base_url, headers={"Authorization": f"Bearer {token}"}, timeout=60
    ) as client:
        items: list[dict[str, Any]] = client.get("/api/v1/memories/", params={"size": 100}).json()["items"]
    return Counter(item["content"] for item in items)


def _check(server: MemoryServer) -> None:
    token = server.make_token("racer")
    statuses = _write_at_once(server, token)
    assert len(statuses) == WRITERS // 2 * len(TEXTS) + WRITERS // 2 * (1 + len(TEXTS))
    assert set(statuses) == {200}, Counter(statuses)
    assert _stored(server, token) == Counter(TEXTS)  # each text once, none lost
    with httpx.Client(
        base_url=server.base_url, headers={"Authorization": f"Bearer {token}"}, timeout=60
    ) as client:
        hits = client.post("/api/v1/memories/search", json={"query": TEXTS[3], "limit": 20}).json()["results"]
    # No orphan vector either: the losers' points were removed, so the text is found once.
    assert [hit["content"] for hit in hits].count(TEXTS[3]) == 1


def test_concurrent_writers_of_the_same_texts_store_each_once_on_sqlite(start_server) -> None:  # type: ignore[no-untyped-def]
    _check(start_server())


@pytest.mark.postgres
def test_concurrent_writers_of_the_same_texts_store_each_once_on_postgresql(  # type: ignore[no-untyped-def]
    start_server, postgres_url: str
) -> None:
    _check(start_server(env={"DATABASE_URL": postgres_url}))
