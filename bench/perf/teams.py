"""What a team costs a search: p50/p95 with and without a team's shared memories. Prints JSON.

    .venv/bin/python -m bench.perf.teams [--personal 10000] [--shared 1000] [--queries 300]
        [--data-dir DIR] [--output bench/results/teams_search.json]

In this process (the service REST's search calls, without HTTP: steadier on a shared machine),
on a fresh data directory: user ``bench`` stores ``--personal`` synthetic memories (batches, as
``POST /api/v1/memories/batch``), user ``sharer`` stores ``--shared`` others and shares them
into team ``bench-team`` (``teams.max_memories`` raised to fit), one share per memory through
the policy gate as ``POST /api/v1/teams/{team}/share`` does. Then the same fresh queries (none
asked twice, so the embedding cache answers none) go three ways, interleaved query by query:

* ``pipeline``: the search as before teams (``Search.search``, the user's memories only);
* ``no_team``: the merged search for a user in no team (the membership look-up added);
* ``team``: the merged search for a member of the team (one more search over the team's
  memories, the merge, the audit rows).

Also reports the load average before and after. Not a test: compare the columns of one run.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.harness.paths import ROOT
from bench.harness.stats import percentiles
from bench.harness.synthetic import fresh_queries, synthetic


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--personal", type=int, default=10_000)
    parser.add_argument("--shared", type=int, default=1_000)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--data-dir", type=Path, default=None)
    parser.add_argument("--output", type=Path, default=None)
    args = parser.parse_args()

    from claude_code_memory.config import load_settings
    from claude_code_memory.memories.server_parts import ServerParts
    from claude_code_memory.search.request import SearchRequest

    work = args.data_dir or Path(tempfile.mkdtemp(prefix="bench-teams-"))
    settings = load_settings(
        config_path=ROOT / "config.yaml",
        environ={},
        overrides={
            "server.data_dir": str(work / "data"),
            "teams.max_memories": str(max(args.shared, 1) + 10),
            "privacy.require_consent": "false",
        },
    )
    parts = ServerParts(settings)
    service = parts.service
    load_before = os.getloadavg()
    started = time.perf_counter()
    texts = synthetic(args.personal)
    for i in range(0, len(texts), 500):
        service.writes.add_memories(
            user_id="bench", app_name="bench", items=[{"text": t} for t in texts[i : i + 500]]
        )
    shared_texts = [f"Team convention: {text}" for text in synthetic(args.shared, seed=23)]
    ids: list[str] = []
    for i in range(0, len(shared_texts), 500):
        answers = service.writes.add_memories(
            user_id="sharer", app_name="bench", items=[{"text": t} for t in shared_texts[i : i + 500]]
        )
        ids += [result["id"] for answer in answers for result in answer["results"]]
    service.teams.create("sharer", "bench-team")
    for i in range(0, len(ids), 100):
        service.team_memories.share("sharer", "bench-team", ids[i : i + 100])
    code = service.teams.invite("sharer", "bench-team", "bench", "reader")["code"]
    service.teams.accept("bench", code)
    built_seconds = time.perf_counter() - started
    # A user with the same memories in no team: ``other`` gets the personal memories too.
    for i in range(0, len(texts), 500):
        service.writes.add_memories(
            user_id="other", app_name="bench", items=[{"text": t} for t in texts[i : i + 500]]
        )

    queries = fresh_queries()

    def asked(user_id: str, query: str) -> SearchRequest:
        return SearchRequest(user_id=user_id, app_name="bench", query=query)

    runs: dict[str, Any] = {
        "pipeline": lambda q: service.pipeline.search(asked("bench", q)),
        "no_team": lambda q: service.team_search.search(asked("other", q)),
        "team": lambda q: service.team_search.search(asked("bench", q)),
    }
    samples: dict[str, list[float]] = {name: [] for name in runs}
    team_hits = 0
    for n in range(args.queries + 5):
        names = list(runs)
        names = names[n % 3 :] + names[: n % 3]  # the order rotates each query
        for name in names:
            query = next(queries)
            at = time.perf_counter()
            hits = runs[name](query)
            if n >= 5:  # warm-up
                samples[name].append(time.perf_counter() - at)
                if name == "team":
                    team_hits += sum(1 for hit in hits if hit.team)
    result = {
        "bench": "teams_search",
        "personal_memories": args.personal,
        "team_memories": service.team_memories.memories("bench", "bench-team", 1)["total"],
        "queries_each": args.queries,
        "limit": 10,
        "search_slots": settings.teams.search_slots,
        "build_seconds": round(built_seconds, 1),
        "search": {name: percentiles(values) for name, values in samples.items()},
        "team_hits_per_team_search": round(team_hits / max(1, args.queries), 2),
        "load_before": [round(x, 2) for x in load_before],
        "load_after": [round(x, 2) for x in os.getloadavg()],
        "cpus": os.cpu_count(),
    }
    parts.close()
    text = json.dumps(result, indent=2)
    print(text)
    if args.output:
        args.output.write_text(text + "\n")


if __name__ == "__main__":
    main()
