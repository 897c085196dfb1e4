"""``kill -9`` during an ingest, delete, forget or purge of 150 memories; after the restart and its
reconciliation, do SQL and the vector store agree, and is every acknowledged write there?

    Kill9(work_dir, seed).round(operation) -> Outcome     one operation, killed at a random moment
    Kill9(work_dir, seed).summary() -> dict               the JSON bench/faults/kill9.py prints

A round runs the operation in a thread against a real server (``ccmem serve`` on 127.0.0.1),
SIGKILLs the server by its PID after a random delay within the operation's expected duration,
starts it again, waits for ``/health`` to report the start-up reconciliation done, stops it, and
reads the data directory with the package's own classes (:mod:`.consistency`).
"""

from __future__ import annotations

import random
import signal
import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import update

from claude_code_memory.db.models import Memory

from .consistency import Stores
from .server import MemoryServer

OPERATIONS = ("ingest", "delete", "forget", "purge")
BATCH = 150
USER = "kill9"
#: The longest an operation of BATCH memories is expected to take, for the kill's delay when
#: no run of it has been timed yet (ingest is timed at every set-up).
DEFAULT_SECONDS = {"ingest": 3.0, "delete": 0.8, "forget": 0.8, "purge": 0.8}


@dataclass
class Outcome:
    operation: str
    killed_after: float
    acknowledged: bool
    half_deleted: int
    orphans: int
    acknowledged_lost: int
    repaired: dict[str, int]


@dataclass
class Kill9:
    work_dir: Path
    seed: int = 0
    outcomes: list[Outcome] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.random = random.Random(self.seed)
        self.server = MemoryServer(self.work_dir)
        self.token = ""
        #: Memories whose write was acknowledged (2xx) and which no later operation targeted.
        self.kept: set[str] = set()
        self.seconds = dict(DEFAULT_SECONDS)
        self.rounds = 0

    # -- the server ---------------------------------------------------------------------------
    def __enter__(self) -> Kill9:
        self.server.start()
        self.token = self.server.make_token(USER)
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.server.stop()

    def _client(self, *, admin: bool = False) -> httpx.Client:
        token = self.server.admin_token if admin else self.token
        return httpx.Client(
            base_url=self.server.base_url, headers={"Authorization": f"Bearer {token}"}, timeout=120
        )

    def _kill(self) -> None:
        process = self.server.process
        assert process is not None
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)

    def _reconciliation(self, timeout: float = 300) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            body = httpx.get(f"{self.server.base_url}/health", timeout=10).json()
            report = body.get("reconciliation")
            if report is not None and report["state"] != "running":
                if report["state"] != "done":
                    raise RuntimeError(f"reconciliation failed: {report}\n{self.server.log()}")
                return report
            if time.monotonic() > deadline:
                raise RuntimeError(f"reconciliation not done after {timeout} s: {report}")
            time.sleep(0.1)

    # -- the operations -----------------------------------------------------------------------
    def _texts(self, app: str) -> list[str]:
        topics = ["deploys", "tea", "the build", "vim", "postgres", "the office", "holidays", "the API"]
        return [
            f"{app}: note {index} about {self.random.choice(topics)} {uuid.uuid4().hex[:12]}"
            for index in range(BATCH)
        ]

    def _setup(self, app: str) -> list[str]:
        """BATCH memories of a new app, stored and acknowledged (the batch route, timed)."""
        started = time.perf_counter()
        with self._client() as client:
            items = [{"text": text} for text in self._texts(app)]
            response = client.post("/api/v1/memories/batch", json={"app": app, "items": items})
        response.raise_for_status()
        ids = [r["results"][0]["id"] for r in response.json()["results"] if r.get("results")]
        assert len(ids) == BATCH, response.text[:500]
        self.seconds["ingest"] = max(self.seconds["ingest"], time.perf_counter() - started)
        self.kept.update(ids)
        return ids

    def _ingest(self, app: str, acknowledged: list[str]) -> None:
        with self._client() as client:
            for text in self._texts(app):
                response = client.post("/api/v1/memories/", json={"text": text, "app": app})
                if response.status_code // 100 == 2:
                    acknowledged.append(response.json()["id"])

    def _run(self, operation: str, app: str, ids: list[str], acknowledged: list[str]) -> None:
        try:
            if operation == "ingest":
                self._ingest(app, acknowledged)
                return
            if operation == "delete":
                with self._client() as client:
                    response = client.request("DELETE", "/api/v1/memories/", json={"memory_ids": ids})
            elif operation == "forget":
                with self._client() as client:
                    response = client.post("/api/v1/forget", json={"app": app})
            else:
                with self._client(admin=True) as client:
                    response = client.post("/api/v1/retention/purge")
            if response.status_code // 100 == 2:
                acknowledged.extend(ids)
        except httpx.HTTPError:
            pass  # the server was killed under the request

    def _expire(self, ids: list[str]) -> None:
        """Move the memories' expiry into the past (the server runs: SQLite takes the writer)."""
        with Stores(self.server.data_dir, vectors=False) as stores, stores.database.session() as session:
            session.execute(
                update(Memory)
                .where(Memory.id.in_([uuid.UUID(i) for i in ids]))
                .values(expires_at=datetime(2000, 1, 1))
            )

    # -- a round ------------------------------------------------------------------------------
    def round(self, operation: str) -> Outcome:
        self.rounds += 1
        app = f"r{self.rounds}"
        ids: list[str] = []
        if operation != "ingest":
            ids = self._setup(app)
            self.kept.difference_update(ids)  # targeted: present or gone, both are right
            if operation == "purge":
                self._expire(ids)
        acknowledged: list[str] = []
        delay = self.random.uniform(0.0, self.seconds[operation])
        worker = threading.Thread(target=self._run, args=(operation, app, ids, acknowledged))
        started = time.perf_counter()
        worker.start()
        worker.join(timeout=delay)
        finished = not worker.is_alive()
        self._kill()
        worker.join(timeout=60)
        if finished and operation != "ingest":
            self.seconds[operation] = max(self.seconds[operation], time.perf_counter() - started)
        if operation == "ingest":
            self.kept.update(acknowledged)

        self.server.start()
        report = self._reconciliation()
        self.server.stop()
        with Stores(self.server.data_dir) as stores:
            found = stores.check()
        gone_after_ack = set(ids) & found.live if operation != "ingest" and acknowledged else set()
        outcome = Outcome(
            operation=operation,
            killed_after=round(delay, 3),
            acknowledged=bool(acknowledged) if operation != "ingest" else finished,
            half_deleted=len(found.half_deleted),
            orphans=len(found.orphans),
            acknowledged_lost=len(self.kept - found.live) + len(gone_after_ack),
            repaired={
                name: int(report[name])
                for name in ("orphan_vectors_removed", "missing_vectors_restored", "stale_history_removed")
            },
        )
        self.outcomes.append(outcome)
        self.server.start()
        return outcome

    def run(self, rounds: int) -> dict[str, Any]:
        for _ in range(rounds):
            self.round(self.random.choice(OPERATIONS))
        return self.summary()

    def summary(self) -> dict[str, Any]:
        repaired: Counter[str] = Counter()
        for outcome in self.outcomes:
            repaired.update(outcome.repaired)
        return {
            "rounds": len(self.outcomes),
            "by_operation": dict(Counter(o.operation for o in self.outcomes)),
            "half_deleted": sum(o.half_deleted for o in self.outcomes),
            "orphans": sum(o.orphans for o in self.outcomes),
            "acknowledged_lost": sum(o.acknowledged_lost for o in self.outcomes),
            "repaired": {name: repaired[name] for name in sorted(repaired)},
            "killed_before_the_answer": sum(not o.acknowledged for o in self.outcomes),
        }
