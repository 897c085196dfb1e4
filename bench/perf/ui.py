"""Web UI benchmark: how long each page takes, end to end, with N memories. Prints JSON.

    .venv/bin/python -m bench.perf.ui [--memories 2000] [--rounds 7]

Starts the real API (`ccmem serve`) and the real UI (`ccmem ui`) on free loopback ports,
fills one user's memories through `POST /api/v1/memories/batch` (two apps, five projects),
signs in over HTTP as a browser would, then times each page (server-side rendering plus the
API calls it makes; no browser paint). Not a test: numbers depend on the machine.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import tempfile
import time
from pathlib import Path

import httpx

from tests.support.server import MemoryServer
from tests.support.web_ui import UiServer

PAGES = [
    "/",
    "/memories",
    "/memories?mode=text&q=decided&project=/work/p2&sort=content",
    "/memories?q=what+did+the+db+team+decide",
    "/consent",
    "/apps",
    "/settings",
    "/connect",
]
BATCH = 500


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-ui-"))
    report: dict[str, object] = {"memories": args.memories, "rounds": args.rounds, "pages": {}}
    with MemoryServer(work / "api") as api:
        token = api.make_token("bench")
        headers = {"Authorization": f"Bearer {token}"}
        started = time.perf_counter()
        for first in range(0, args.memories, BATCH):
            items = [
                {
                    "text": f"Memory {i}: the {['api', 'ui', 'db', 'proxy'][i % 4]} team decided item {i}",
                    "project": f"/work/p{i % 5}",
                }
                for i in range(first, min(first + BATCH, args.memories))
            ]
            app = ["cursor", "claude-code"][(first // BATCH) % 2]
            response = httpx.post(
                f"{api.base_url}/api/v1/memories/batch",
                json={"items": items, "app": app},
                headers=headers,
                timeout=600,
            )
            response.raise_for_status()
        report["ingest_seconds"] = round(time.perf_counter() - started, 1)
        with (
            UiServer(work / "ui", api.base_url) as ui,
            httpx.Client(base_url=ui.base_url, timeout=60) as client,
        ):
            form = client.get("/signin")
            csrf = re.search(r'name="csrf" value="([^"]+)"', form.text)
            assert csrf is not None
            signed = client.post("/signin", data={"token": token, "csrf": csrf.group(1)})
            if signed.status_code != 303:
                raise SystemExit(f"sign-in failed: HTTP {signed.status_code}")
            pages: dict[str, object] = {}
            for path in PAGES:
                times = []
                for _ in range(args.rounds):
                    tick = time.perf_counter()
                    response = client.get(path)
                    times.append((time.perf_counter() - tick) * 1000)
                    if response.status_code != 200:
                        raise SystemExit(f"{path}: HTTP {response.status_code}")
                pages[path] = {
                    "median_ms": round(statistics.median(times), 1),
                    "max_ms": round(max(times), 1),
                    "kib": len(response.content) // 1024,
                }
            report["pages"] = pages
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
