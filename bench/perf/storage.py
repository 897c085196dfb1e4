"""Bytes on disk per store before and after deleting half of N memories and reclaiming.

    .venv/bin/python -m bench.perf.storage [--memories 5000] [--mode delete|forget]

In process, on a temporary data directory (the real SQLite database, Qdrant Edge and mem0
history): writes N memories of ~500 bytes (varied English-like text), measures every store's
bytes on disk (memories/lifecycle/storage.py), deletes every other memory (``delete``: the ordinary delete
that leaves tombstones; ``forget``: a hard delete that removes the rows), measures again, runs a
forced reclaim (memories/lifecycle/reclaim.py: VACUUM of both SQLite files, compaction of the vector
store), measures again, and prints JSON. Automatic reclaiming is off so the three phases are
separate. Timings are wall-clock on whatever machine runs it: noisy on a shared one.
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from sqlalchemy import update

import claude_code_memory.engine  # noqa: F401 - first: it sets mem0's switches before mem0 loads
from claude_code_memory.config import load_settings
from claude_code_memory.db.models import Memory
from claude_code_memory.memories.lifecycle.storage import store_bytes
from claude_code_memory.memories.server_parts import ServerParts, retention_of

USER = "bench"
WORDS = (  # noqa: SIM905 - a word list reads better as words
    "deploy database migration schema index query cache token session server client worker queue "
    "retry timeout config docker image build release branch review merge test fixture mock latency "
    "memory vector search embedding project feature bug error log metric alert backup restore user"
).split()


def sizes(settings: Any) -> dict[str, int]:
    return {entry["store"]: int(entry["bytes"] or 0) for entry in store_bytes(settings)}


def text(rng: random.Random, index: int) -> str:
    return f"Note {index}: " + " ".join(rng.choice(WORDS) for _ in range(60))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=5000)
    parser.add_argument("--mode", choices=("delete", "forget"), default="delete")
    args = parser.parse_args()
    rng = random.Random(5)
    with tempfile.TemporaryDirectory(prefix="ccmem-storage-") as tmp:
        settings = load_settings(
            config_path=None,
            environ={},
            overrides={"server.data_dir": str(Path(tmp) / "data"), "storage.auto_reclaim": False},
        )
        parts = ServerParts(settings)
        service = parts.service
        try:
            started = time.perf_counter()
            ids: list[str] = []
            for start in range(0, args.memories, 250):
                batch = [{"text": text(rng, i)} for i in range(start, min(start + 250, args.memories))]
                for outcome in service.writes.add_memories(user_id=USER, app_name="bench", items=batch):
                    ids.append(outcome["results"][0]["id"])
            write_seconds = time.perf_counter() - started
            service.erasure.erase()  # the same starting point for the logs as after a delete
            written = sizes(settings)

            started = time.perf_counter()
            doomed = ids[::2]
            if args.mode == "delete":
                for start in range(0, len(doomed), 500):
                    service.states.delete_memories(doomed[start : start + 500], user_id=USER, changed_by=USER)
            else:
                with service.database.session() as session:  # mark half, then forget them at once
                    session.execute(
                        update(Memory)
                        .where(Memory.id.in_([uuid.UUID(i) for i in doomed]))
                        .values(conversation_id="doomed")
                    )
                retention_of(service).forget(USER, conversation_id="doomed")
            delete_seconds = time.perf_counter() - started
            deleted = sizes(settings)

            report = service.reclaim.run(force=True)
            reclaimed = sizes(settings)
        finally:
            parts.close()
        closed = sizes(settings)

    def total(measure: dict[str, int]) -> int:
        return sum(measure.values())

    print(
        json.dumps(
            {
                "memories": args.memories,
                "deleted": len(doomed),
                "mode": args.mode,
                "write_seconds": round(write_seconds, 1),
                "delete_seconds": round(delete_seconds, 1),
                "bytes": {
                    "written": written,
                    "after_delete": deleted,
                    "after_reclaim": reclaimed,
                    "closed": closed,
                },
                "total_bytes": {
                    "written": total(written),
                    "after_delete": total(deleted),
                    "after_reclaim": total(reclaimed),
                    "closed": total(closed),
                },
                "reclaim": report,
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
