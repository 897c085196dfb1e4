"""Fault check: an OpenMemory database with bad rows among good ones, imported twice. Prints JSON.

    .venv/bin/python -m bench.faults.openmemory_import [--good 200] [--bad-each 3]

Builds a database in OpenMemory's schema (``tests/support/openmemory_db.py``) with ``--good``
good memories and, spread between them, ``--bad-each`` rows of each kind the audit found
stopping the import: text that is not valid UTF-8, a state OpenMemory never had, empty content,
a row over the server's request body cap; and an id that is not a UUID. Starts a server on
127.0.0.1 (stopped by PID at the end) and runs ``ccmem import openmemory --json`` twice.

``good_rows_lost`` (good rows not listed after the first run), ``bad_rows_unreported`` (bad
rows not named in ``bad_rows`` with a reason), ``failed_runs`` (a run whose exit status was not
0) and ``imported_again`` (rows the second run imported) must be 0.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import tempfile
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import httpx

from tests.support.openmemory_db import OpenMemoryDb
from tests.support.server import MemoryServer

#: What makes each kind of row bad: the SQL that spoils a good row (its id is the parameter).
SPOILERS = {
    "invalid_utf8": ("UPDATE memories SET content = CAST(X'6f6b2080ff' AS TEXT) WHERE id = ?", ()),
    "unknown_state": ("UPDATE memories SET state = 'forgotten' WHERE id = ?", ()),
    "empty_content": ("UPDATE memories SET content = '' WHERE id = ?", ()),
    "over_body_cap": ("UPDATE memories SET content = ? WHERE id = ?", ("z" * 2_500_000,)),
    "id_not_a_uuid": ("UPDATE memories SET id = 'bad-' || id WHERE id = ?", ()),
}


def build(path: Path, good: int, bad_each: int) -> tuple[list[str], dict[str, str]]:
    """The good rows' texts, and each bad row's id (as the report names it) with its kind."""
    db = OpenMemoryDb(path)
    owner = db.user("default_user")
    app = db.app(owner, "openmemory")
    start = datetime(2024, 1, 1)
    kinds = [kind for kind in SPOILERS for _ in range(bad_each)]
    every = max(1, good // max(1, len(kinds)))
    texts, spoiled = [], []
    for index in range(good + len(kinds)):
        at = start + timedelta(minutes=index)
        if kinds and index % (every + 1) == every:
            kind = kinds.pop()
            spoiled.append((db.memory(owner, app, f"to be spoiled: {kind} {index}", created_at=at), kind))
        else:
            text = f"Good memory number {index}: the build of service {index} uses toolchain {index * 7}"
            db.memory(owner, app, text, created_at=at)
            texts.append(text)
    db.close()
    bad: dict[str, str] = {}
    with sqlite3.connect(path) as connection:
        for memory_id, kind in spoiled:
            sql, values = SPOILERS[kind]
            connection.execute(sql, (*values, memory_id.hex))
            bad["bad-" + memory_id.hex if kind == "id_not_a_uuid" else str(memory_id)] = kind
    return texts, bad


def run(server: MemoryServer, path: Path, token: str) -> tuple[int, dict[str, Any]]:
    done = server.ccmem(
        "import", "openmemory", str(path), "--json", "--url", server.base_url, "--token", token,
        check=False, timeout=1800,
    )  # fmt: skip
    try:
        return done.returncode, json.loads(done.stdout)
    except ValueError:
        return done.returncode or 1, {"stderr": done.stderr[-2000:]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--good", type=int, default=200)
    parser.add_argument("--bad-each", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="ccmem-fault-import-") as work:
        path = Path(work) / "openmemory.db"
        texts, bad = build(path, args.good, args.bad_each)
        with MemoryServer(Path(work) / "server") as server:
            token = server.make_token("importer")
            first_exit, first = run(server, path, token)
            second_exit, second = run(server, path, token)
            with httpx.Client(
                base_url=server.base_url, headers={"Authorization": f"Bearer {token}"}, timeout=120
            ) as api:
                listed: set[str] = set()
                page, pages = 1, 1
                while page <= pages:
                    answer = api.post("/api/v1/memories/filter", json={"page": page, "size": 100}).json()
                    listed |= {item["content"] for item in answer["items"]}
                    pages, page = answer["pages"], page + 1
    reported = {row["openmemory_id"]: row["reason"] for row in first.get("bad_rows", []) if row.get("reason")}
    print(
        json.dumps(
            {
                "good_rows": len(texts),
                "bad_rows": len(bad),
                "imported": first.get("imported"),
                "reported": {
                    memory_id: [bad[memory_id], reported[memory_id]]
                    for memory_id in reported
                    if memory_id in bad
                },
                "good_rows_lost": sum(text not in listed for text in texts),
                "bad_rows_unreported": sum(memory_id not in reported for memory_id in bad),
                "failed_runs": (first_exit != 0) + (second_exit != 0),
                "imported_again": second.get("imported", -1) if second_exit == 0 else -1,
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
