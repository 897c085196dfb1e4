"""Fault check: is deleted text gone from the disk after a delete, a forget and a purge? Prints JSON.

    .venv/bin/python -m bench.faults.erasure [--memories 1000] [--batch 100]

In process (the server's own components, real SQLite, Qdrant Edge and embedder) on a temporary
data directory: stores ``--memories`` background memories and three groups of ``--batch``
memories that carry random markers, then deletes the first group (``delete_memories``, what
REST DELETE and MCP run), forgets the second (by app) and purges the third (their expiry moved
into the past, then a retention sweep). After each step every file under the data directory is
read as bytes: ``bytes_found`` sums, per file, the bytes of deleted markers found (must be
empty), and ``kept_markers_found`` says whether the markers of memories still there were found
(so a scan that reads nothing cannot pass). ``erase_seconds`` is the erasure step of that batch
(FTS5 optimize and log truncation of memory.db, log truncation of history.db; the vector store
holds no text to erase), ``operation_seconds`` the whole delete, forget or purge including it.
Not a test: the times depend on the machine and grow with the store (the FTS5 optimize
rewrites the keyword index).
"""

from __future__ import annotations

import argparse
import json
import secrets
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from sqlalchemy import update

import claude_code_memory.engine  # noqa: F401 - first: it sets mem0's switches before mem0 loads
from claude_code_memory.api.app import ServerParts
from claude_code_memory.config import load_settings
from claude_code_memory.db.models import Memory
from claude_code_memory.memories.server_parts import retention_of

USER, APP, OTHER_APP = "bench", "claude-code", "cursor"
TOPICS = ["deploys", "tea", "the build", "vim", "postgres", "the office", "holidays", "the API"]


def marker() -> str:
    return f"mk{secrets.token_hex(10)}7"


def needle(mark: str) -> bytes:
    return mark[-14:].encode()  # the tail: FTS5 stores terms after a shared prefix


def scan(data_dir: Path, gone: list[str], kept: list[str]) -> tuple[dict[str, int], bool]:
    found: dict[str, int] = {}
    seen_kept: set[str] = set()
    for path in sorted(p for p in data_dir.rglob("*") if p.is_file()):
        data = path.read_bytes()
        size = sum(data.count(needle(mark)) * len(needle(mark)) for mark in gone)
        if size:
            found[str(path.relative_to(data_dir))] = size
        seen_kept.update(mark for mark in kept if needle(mark) in data)
    return found, seen_kept == set(kept)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--memories", type=int, default=1000, help="background memories (kept)")
    parser.add_argument("--batch", type=int, default=100, help="memories per delete, forget and purge")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="ccmem-erasure-") as tmp:
        data_dir = Path(tmp) / "data"
        settings = load_settings(
            config_path=None,
            environ={},
            overrides={"server.data_dir": str(data_dir), "privacy.auto_delete_after_days": 30},
        )
        parts = ServerParts(settings)
        service = parts.service
        timings: list[dict[str, float]] = []
        erase = service.erasure.erase

        def timed_erase(**kwargs: Any) -> dict[str, float]:
            timings.append(erase(**kwargs))
            return timings[-1]

        service.erasure.erase = timed_erase  # type: ignore[method-assign]
        try:

            def add(text: str, app: str = APP) -> str:
                return service.writes.add_memory(user_id=USER, app_name=app, text=text)[0]["id"]

            for index in range(args.memories):
                add(f"Note {index}: the user mentioned {TOPICS[index % len(TOPICS)]} on day {index}")
            kept = [marker() for _ in range(10)]
            for mark in kept:
                add(f"The user's code name is {mark}")
            groups: dict[str, list[str]] = {}
            ids: dict[str, list[str]] = {}
            for step in ("delete", "forget", "purge"):
                groups[step] = [marker() for _ in range(args.batch)]
                app = OTHER_APP if step == "forget" else APP
                ids[step] = [add(f"The user's code name is {mark}", app) for mark in groups[step]]

            retention = retention_of(service)
            operations = {
                "delete": lambda: service.states.delete_memories(ids["delete"], user_id=USER),
                "forget": lambda: retention.forget(USER, app=OTHER_APP),
                "purge": retention.sweep,
            }
            report: dict[str, Any] = {"memories": args.memories + 10 + 3 * args.batch, "batch": args.batch}
            gone: list[str] = []
            for step, operation in operations.items():
                if step == "purge":
                    with service.database.session() as session:
                        keys = [uuid.UUID(i) for i in ids["purge"]]
                        session.execute(
                            update(Memory).where(Memory.id.in_(keys)).values(expires_at=service.clock())
                        )
                timings.clear()
                started = time.perf_counter()
                operation()
                elapsed = time.perf_counter() - started
                gone += groups[step]
                found, kept_found = scan(data_dir, gone, kept)
                report[step] = {
                    "bytes_found": found,
                    "kept_markers_found": kept_found,
                    "erase_seconds": {k: round(sum(t[k] for t in timings), 4) for k in timings[0]},
                    "erase_calls": len(timings),
                    "operation_seconds": round(elapsed, 4),
                }
        finally:
            parts.close()
        found, kept_found = scan(data_dir, gone, kept)
        report["after_close"] = {"bytes_found": found, "kept_markers_found": kept_found}
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
