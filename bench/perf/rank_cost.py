"""What each ranking step costs a search through REST, side by side in one run. Prints JSON.

    .venv/bin/python -m bench.perf.rank_cost [--size 10000] [--queries 400] [--turns 20]
        [--variant LABEL:KEY=VALUE[,KEY=VALUE...]]... [--data-dir DIR] [--in-process]

Stores ``--size`` synthetic memories of one user once, as captured conversations would be
(``--turns`` a conversation, each turn with its ``conversation_id`` and ``captured_at``; every
other turn asks a question), so that every ranking step has work: neighbours, answers, the
conversation share, the length prior. Then one server per variant runs on a copy of that data
(the defaults, and by default each step of docs/search.md switched in turn; ``--variant``
replaces those), and the same searches go to every server in turn, the order rotating each query, every
query asked once (the embedding cache answers none); half of them ask "When did …?", which the
when boost reads. Reports REST p50/p95 per server, its RSS, and the load average before and
after. ``--data-dir`` keeps the built data there (reused when it exists). ``--in-process``
times the ranking step itself instead (:func:`claude_code_memory.search.ranking.rank`, and the
whole search without HTTP), in this process on a copy of the data, the settings switched
between searches: the steps' own cost, without the servers' contention. Not a test: numbers
depend on the machine; compare the columns of one run.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import shutil
import tempfile
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import httpx

from bench.harness.paths import ROOT
from bench.harness.server import Server, rss_mb
from bench.harness.stats import WARMUP, percentiles
from bench.harness.synthetic import fresh_queries, synthetic
from bench.quality.locomo import variant

USER = "bench"
#: Each step of docs/search.md off in turn (the when boost, off by default, on), and the
#: ranking without the answer share, the length prior and the fusion constant of 6.
DEFAULT_VARIANTS = [
    "before:search.answer_share=0,search.length_prior=0,search.rrf_k=10",
    "no-answer:search.answer_share=0",
    "no-length:search.length_prior=0",
    "with-when:search.when_boost=0.3",
    "no-neighbours:search.neighbour_share=0,search.conversation_share=0,search.answer_share=0",
]


def conversation_items(size: int, turns: int) -> list[dict[str, str]]:
    """``size`` synthetic turns in conversations of ``turns``, every other one a question;
    ``turns`` 0: memories in no conversation, as OpenMemory's clients write them."""
    if not turns:
        return [{"text": text} for text in synthetic(size)]
    start = datetime(2024, 1, 1, 9, 0)
    items = []
    for n, text in enumerate(synthetic(size)):
        conversation, position = divmod(n, turns)
        if position % 2:
            text = f"Really, {text}?"
        at = (start + timedelta(hours=conversation, seconds=position)).isoformat() + "Z"
        items.append({"text": text, "conversation_id": f"c{conversation}", "captured_at": at})
    return items


def build(into: Path, size: int, turns: int) -> None:
    server = Server(into)
    try:
        token = server.token(USER)
        items = conversation_items(size, turns)
        headers = {"Authorization": f"Bearer {token}"}
        with httpx.Client(base_url=server.base, headers=headers, timeout=300) as client:
            for i in range(0, len(items), 500):
                batch = {"app": "bench", "items": items[i : i + 500]}
                response = client.post("/api/v1/memories/batch", json=batch)
                response.raise_for_status()
                assert response.json()["failed"] == 0
    finally:
        server.stop()


def queries(n: int) -> list[str]:
    """``n`` distinct queries; every other one asks when."""
    taken = list(itertools.islice(fresh_queries(), n))
    return [f"When did {q}?" if i % 2 else q for i, q in enumerate(taken)]


def in_process(
    source: Path, work: Path, variants: list[tuple[str, dict[str, str]]], asked: list[str]
) -> dict:
    """p50/p95 of the ranking step and of the whole search per variant, in this process."""
    from claude_code_memory.config import load_settings
    from claude_code_memory.memories.server_parts import ServerParts
    from claude_code_memory.search import pipeline
    from claude_code_memory.search.request import SearchRequest

    shutil.copytree(source, work / "in-process")
    settings = load_settings(
        config_path=ROOT / "config.yaml",
        environ={},
        overrides={"server.data_dir": str(work / "in-process" / "data")},
    )
    parts = ServerParts(settings)
    defaults = settings.search.model_copy()
    rank = pipeline.rank
    ranking: list[float] = []

    def timed(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return rank(*args, **kwargs)
        finally:
            ranking.append(time.perf_counter() - started)

    pipeline.rank = timed  # type: ignore[assignment]
    runs = [("defaults", {}), *variants]
    rank_samples: dict[str, list[float]] = {label: [] for label, _ in runs}
    search_samples: dict[str, list[float]] = {label: [] for label, _ in runs}
    try:
        for i, query in enumerate(asked):
            shift = i % len(runs)
            for label, changes in runs[shift:] + runs[:shift]:
                for key, value in defaults:
                    setattr(settings.search, key, value)
                for key, value in changes.items():
                    setattr(settings.search, key.removeprefix("search."), value)
                ranking.clear()
                started = time.perf_counter()
                asked = SearchRequest(user_id=USER, app_name="bench", query=query, limit=10)
                parts.service.pipeline.search(asked)
                if i >= WARMUP:
                    search_samples[label].append(time.perf_counter() - started)
                    rank_samples[label].extend(ranking)
    finally:
        pipeline.rank = rank  # type: ignore[assignment]
        parts.close()
    return {
        "rank": {label: percentiles(v) for label, v in rank_samples.items()},
        "search": {label: percentiles(v) for label, v in search_samples.items()},
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--turns", type=int, default=20, help="turns a conversation (0: none)")
    parser.add_argument("--queries", type=int, default=400)
    parser.add_argument("--variant", action="append", type=variant, metavar="LABEL:KEY=VALUE[,KEY=VALUE]")
    parser.add_argument("--data-dir", type=Path, help="keep the built data here (reused if present)")
    parser.add_argument("--in-process", action="store_true", help="time the ranking step in this process")
    args = parser.parse_args()
    variants = args.variant or [variant(raw) for raw in DEFAULT_VARIANTS]

    work = Path(tempfile.mkdtemp(prefix="ccmem-rank-cost-"))
    servers: dict[str, Server] = {}
    try:
        source = args.data_dir or work / "source"
        if not (source / "data").exists():
            build(source, args.size, args.turns)
        if args.in_process:
            load_before = os.getloadavg()
            timings = in_process(source, work, variants, queries(WARMUP + args.queries))
            print(
                json.dumps(
                    {
                        "size": args.size,
                        "load_average_before_after": [round(x, 2) for x in (*load_before, *os.getloadavg())],
                        "settings": dict(variants),
                        **timings,
                    },
                    indent=2,
                )
            )
            return
        for label, settings in [("defaults", {}), *variants]:
            shutil.copytree(source, work / label)
            servers[label] = Server(work / label, settings=settings)
        clients = {
            label: httpx.Client(
                base_url=server.base, headers={"Authorization": f"Bearer {server.token(USER)}"}, timeout=60
            )
            for label, server in servers.items()
        }
        asked = queries(WARMUP + args.queries)
        load_before = os.getloadavg()
        samples: dict[str, list[float]] = {label: [] for label in servers}
        order = list(servers)
        for i, query in enumerate(asked):
            shift = i % len(order)
            for label in order[shift:] + order[:shift]:
                started = time.perf_counter()
                response = clients[label].post("/api/v1/memories/search", json={"query": query, "limit": 10})
                elapsed = time.perf_counter() - started
                response.raise_for_status()
                assert response.json()["results"], "search returned nothing"
                if i >= WARMUP:
                    samples[label].append(elapsed)
        report = {
            "size": args.size,
            "turns_per_conversation": args.turns,
            "load_average_before_after": [round(x, 2) for x in (*load_before, *os.getloadavg())],
            "settings": {label: settings for label, settings in variants},
            "rest_search": {label: percentiles(v) for label, v in samples.items()},
            "rss_mb": {label: round(rss_mb(server.process.pid), 1) for label, server in servers.items()},
        }
        print(json.dumps(report, indent=2))
    finally:
        for server in servers.values():
            server.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
