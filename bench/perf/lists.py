"""The reads behind the web UI's pages and OpenMemory's lists, timed in process on a copy of a
store's metadata database. Prints JSON; results in bench/results/.

    .venv/bin/python -m bench.perf.lists --database FILE --user bench [--repeat 3]

``FILE`` is a ``memory.db`` (a copy: the database is migrated first). Each read is called
``--repeat`` times; the JSON holds every time in ms and the median. The reads are the public
methods the REST routes call: the UI's browse page (its first and its 500th page, with the
filter options), OpenMemory's categories and memory list (first page), the insights page, and
OpenMemory's apps list (the user's apps with their counts, ``apps_page``; not in the first runs).

To compare two checkouts side by side, run this file from each with ``PYTHONPATH`` set to that
checkout, each on its own copy of the database (a newer checkout's migration adds indexes the
older one would then use too).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from claude_code_memory.db.database import Database
from claude_code_memory.memories.read_model import queries
from claude_code_memory.memories.read_model.apps import Apps
from claude_code_memory.memories.read_model.insights import Insights
from claude_code_memory.store.access_log import AccessLog
from claude_code_memory.store.owners import Owners


def _timed(read: Callable[[], object], repeat: int) -> dict[str, Any]:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        read()
        times.append(round((time.perf_counter() - started) * 1000, 1))
    return {"median_ms": statistics.median(times), "ms": times}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--database", type=Path, required=True)
    parser.add_argument("--user", default="bench")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    database = Database(f"sqlite:///{args.database}")
    started = time.perf_counter()
    database.migrate()
    migrated_s = round(time.perf_counter() - started, 2)
    owners, access_log = Owners(database), AccessLog(database)
    reads = queries.Queries(database, owners, access_log, None, None)  # type: ignore[arg-type]
    insights = Insights(database, owners, access_log)
    apps = Apps(database, access_log)
    cases: dict[str, Callable[[], object]] = {
        "browse_first_page": lambda: reads.browse_page(args.user, queries.Browse()),
        "browse_page_500": lambda: reads.browse_page(args.user, queries.Browse(page=500)),
        "categories": lambda: reads.categories(args.user),
        "memory_list_first_page": lambda: reads.memory_page(args.user, queries.Listing(page=1, size=10)),
        "insights": lambda: insights.report(args.user, 30, 7),
        "apps_page": lambda: apps.app_page(owner=args.user),
    }
    results = {name: _timed(read, args.repeat) for name, read in cases.items()}
    access_log.close()
    database.close()
    root = Path(queries.__file__).resolve().parents[3]
    revision = subprocess.run(
        ["git", "-C", str(root), "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False
    ).stdout.strip()
    print(
        json.dumps(
            {
                "checkout": str(root),
                "revision": revision,
                "database": str(args.database),
                "user": args.user,
                "migrated_s": migrated_s,
                "load_average": os.getloadavg(),
                "reads": results,
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
