"""Load run: REST and MCP (SSE) clients at once, mixing searches and adds, for a while. JSON.

    .venv/bin/python -m bench.perf.load [--memories 10000] [--clients 20] [--seconds 60]
        [--add-share 0.25] [--out bench/results/load_10k.json]

Starts the real server (``ccmem serve``, :class:`bench.harness.server.Server`) on a free loopback port
with a temporary data directory, fills it for one user (``bench``) with ``--memories``
synthetic conversation turns (``bench/harness/bulk_load.py``, the server stopped; precomputed embeddings),
starts it again and then runs ``--clients`` clients at once for ``--seconds``: half of them
REST (httpx; ``POST /api/v1/memories`` to add, ``POST /api/v1/memories/search`` to search),
half MCP over SSE (``/mcp/bench/sse/bench``, the official SDK client; the tools
``add_memories`` and ``search_memory``). Each client, in a loop, adds a new memory
(``--add-share`` of its requests) or searches with a query never asked before in the run (the
server's embedding cache answers none, until the 7,056 distinct queries run out: then
``queries_repeated`` is true).

Reported per transport and operation: ``count``, ``p50_ms``, ``p95_ms``, ``p99_ms`` (each
request timed end to end at the client), ``errors`` (a status that is not 2xx, an MCP result
with ``is_error``, an exception, or an add answered without an id) with a few ``error_examples``;
and for the run: ``acknowledged_writes`` and ``lost_writes`` (after the run every acknowledged
add's id is looked for in the user's listing, and one missing from it by ``GET
/api/v1/memories/{id}``: those found by neither are lost), the load average before and after,
the server's RSS. Before the clock starts each client connects (MCP: opens its SSE session and
initialises it) and sends one search and one add (``warm_up``: their errors count, their
adds are checked like the others, their times are left out of the percentiles). Targets
(``targets_met``): p95 <= 100 ms for a search and <= 200 ms for an add, 0 errors, 0 lost.
``requests_per_s`` counts the timed requests. All clients run in this one process (one event
loop), which shares the machine with the server: on a 2-core machine the clients' own work is
part of what is measured. Not a test: numbers depend on the machine and its load (recorded
as ``load_before``/``load_after``).

``--profile FILE`` samples the server (every thread) with py-spy during the run and writes
its collapsed stacks to FILE (``pip install py-spy`` first; it is not a dependency); a line is
``thread;frame;frame... count``. The report's ``profile`` then ranks the package's functions by
their share of the samples (the function and what it called). ``requests_per_s`` is what the
server answered: with closed-loop clients (each sends its next request when the last one is
answered) the mean latency is about ``clients / requests_per_s``.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import random
import re
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from bench.harness.index_build import build_due, index_builds, shard_counts, wait_for_index
from bench.harness.paths import RESULTS
from bench.harness.server import Server, rss_mb
from bench.harness.stats import load, percentiles
from bench.harness.synthetic import OBJECTS, SUBJECTS, VERBS, fresh_queries

#: The load targets: p95 of each operation, in milliseconds.
TARGET_P95_MS = {"search": 100.0, "add": 200.0}
#: Examples of errors kept per transport and operation.
EXAMPLES = 5
USER = "bench"
CLIENT = "bench"


@dataclass
class Tally:
    """What one transport's operation saw: latencies of the requests that succeeded, errors."""

    seconds: list[float] = field(default_factory=list)
    errors: int = 0
    examples: list[str] = field(default_factory=list)

    def error(self, what: str) -> None:
        self.errors += 1
        if len(self.examples) < EXAMPLES:
            self.examples.append(what[:300])

    def report(self) -> dict[str, Any]:
        count = len(self.seconds) + self.errors
        entry: dict[str, Any] = {"count": count, "errors": self.errors}
        if self.seconds:
            ordered = sorted(self.seconds)
            shares = percentiles(ordered)
            entry.update(
                p50_ms=shares["p50_ms"],
                p95_ms=shares["p95_ms"],
                p99_ms=round(ordered[max(0, int(len(ordered) * 0.99) - 1)] * 1000, 2),
            )
        if self.examples:
            entry["error_examples"] = self.examples
        return entry


@dataclass
class Run:
    """What every client shares: the deadline, the query and text sources, the tallies."""

    deadline: float
    add_share: float
    queries: Iterator[str]
    tallies: dict[tuple[str, str], Tally] = field(default_factory=dict)
    acknowledged: list[str] = field(default_factory=list)
    queries_repeated: bool = False
    ran_s: float = 0.0
    #: Clients connected and warmed up, waiting for the clock to start (:meth:`ready`).
    arrived: int = 0
    go: asyncio.Event = field(default_factory=asyncio.Event)
    _texts: Iterator[int] = field(default_factory=itertools.count)

    async def ready(self) -> None:
        """This client is connected and warmed up: wait until every client is, and the clock
        has started."""
        self.arrived += 1
        await self.go.wait()

    def tally(self, transport: str, operation: str) -> Tally:
        return self.tallies.setdefault((transport, operation), Tally())

    def query(self) -> str:
        try:
            return next(self.queries)
        except StopIteration:
            self.queries_repeated = True
            self.queries = fresh_queries(seed=random.randrange(1 << 30))
            return next(self.queries)

    def text(self, client: str) -> str:
        """A new memory's text, different from every other one of the run and of the fill."""
        n = next(self._texts)
        rng = random.Random(n)
        return f"{rng.choice(SUBJECTS)} {rng.choice(VERBS)} {rng.choice(OBJECTS)} (load {client} {n})"


async def rest_client(run: Run, base: str, token: str, name: str, rng: random.Random) -> None:
    headers = {"Authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(base_url=base, headers=headers, timeout=60) as http:

        async def request(add: bool, tally: Tally) -> None:
            started = time.perf_counter()
            try:
                if add:
                    body = {"text": run.text(name), "app": CLIENT}
                    response = await http.post("/api/v1/memories", json=body)
                else:
                    body = {"query": run.query(), "limit": 10}
                    response = await http.post("/api/v1/memories/search", json=body)
                spent = time.perf_counter() - started
                if not response.is_success:
                    return tally.error(f"{response.status_code}: {response.text}")
                if add:
                    answer = response.json()
                    if not isinstance(answer, dict) or not answer.get("id"):
                        return tally.error(f"add answered without an id: {response.text}")
                    run.acknowledged.append(str(answer["id"]))
            except Exception as exc:  # noqa: BLE001 - every failure is an error of the run
                return tally.error(repr(exc))
            tally.seconds.append(spent)

        await _loop(run, "rest", request, rng)


async def mcp_client(run: Run, base: str, token: str, name: str, rng: random.Random) -> None:
    from mcp import ClientSession
    from mcp.client.sse import sse_client

    url = f"{base}/mcp/{CLIENT}/sse/{USER}"
    try:
        async with (
            sse_client(url, headers={"Authorization": f"Bearer {token}"}, timeout=60) as streams,
            ClientSession(streams[0], streams[1]) as session,
        ):
            await session.initialize()

            async def request(add: bool, tally: Tally) -> None:
                started = time.perf_counter()
                try:
                    if add:
                        result = await session.call_tool("add_memories", {"text": run.text(name)})
                    else:
                        arguments = {"query": run.query(), "limit": 10}
                        result = await session.call_tool("search_memory", arguments)
                    spent = time.perf_counter() - started
                    text = "".join(getattr(part, "text", "") for part in result.content)
                    if result.is_error:
                        return tally.error(f"is_error: {text}")
                    if add:
                        ids = [str(r["id"]) for r in json.loads(text)["results"] if r.get("id")]
                        if not ids:
                            return tally.error(f"add answered without an id: {text}")
                        run.acknowledged.extend(ids)
                except Exception as exc:  # noqa: BLE001 - every failure is an error of the run
                    return tally.error(repr(exc))
                tally.seconds.append(spent)

            await _loop(run, "mcp_sse", request, rng)
    except Exception as exc:  # noqa: BLE001 - a session that could not open or broke
        run.tally("mcp_sse", "session").error(repr(exc))


async def _loop(
    run: Run, transport: str, request: Callable[[bool, Tally], Awaitable[None]], rng: random.Random
) -> None:
    """One search and one add to warm up (their errors count, their times do not), then, once
    every client is ready, requests until the deadline."""
    warm_up = run.tally(transport, "warm_up")
    await request(False, warm_up)
    await request(True, warm_up)
    await run.ready()
    while time.monotonic() < run.deadline:
        add = rng.random() < run.add_share
        await request(add, run.tally(transport, "add" if add else "search"))


async def drive(server: Server, token: str, clients: int, seconds: float, add_share: float) -> Run:
    """Connect and warm up every client, then start the clock: ``seconds`` of requests."""
    run = Run(deadline=0.0, add_share=add_share, queries=fresh_queries())
    rest = clients - clients // 2
    tasks = [
        *(
            asyncio.create_task(rest_client(run, server.base, token, f"r{i}", random.Random(i)))
            for i in range(rest)
        ),
        *(
            asyncio.create_task(mcp_client(run, server.base, token, f"m{i}", random.Random(1000 + i)))
            for i in range(clients - rest)
        ),
    ]
    while run.arrived < sum(not task.done() for task in tasks):  # a client that failed is done
        await asyncio.sleep(0.05)
    run.deadline = time.monotonic() + seconds
    run.go.set()
    await asyncio.gather(*tasks)
    run.ran_s = time.monotonic() - (run.deadline - seconds)
    return run


def lost_writes(server: Server, token: str, acknowledged: list[str]) -> dict[str, Any]:
    """Acknowledged adds found neither in the user's listing nor by their id."""
    headers = {"Authorization": f"Bearer {token}"}
    listed: set[str] = set()
    with httpx.Client(base_url=server.base, headers=headers, timeout=120) as http:
        page = 1
        while True:
            body = http.get("/api/v1/memories", params={"page": page, "size": 100}).raise_for_status().json()
            listed.update(str(item["id"]) for item in body["items"])
            if page >= body["pages"]:
                break
            page += 1
        missing = [i for i in set(acknowledged) if i not in listed]
        lost = [i for i in missing if http.get(f"/api/v1/memories/{i}").status_code != 200]
    return {
        "acknowledged_writes": len(set(acknowledged)),
        "listed_memories": len(listed),
        "found_by_id_only": len(missing) - len(lost),
        "lost_writes": len(lost),
        "lost_examples": lost[:EXAMPLES],
    }


def load_run(
    *,
    memories: int,
    clients: int,
    seconds: float,
    add_share: float,
    turns: int = 20,
    cache: Path | None = None,
    profile: Path | None = None,
    settings: dict[str, str] | None = None,
) -> dict[str, Any]:
    """Start a server, fill it, run the clients, check the writes; the report. ``profile``:
    sample the server with py-spy during the run (every thread, native frames left out) and
    write its collapsed stacks there. ``settings``: config keys for the server
    (``hygiene.schedule_hours``: ``0``), as :class:`bench.harness.server.Server` takes them."""
    server = Server(settings=settings)
    data = server.data_dir / "data"
    try:
        token = server.token(USER)
        report: dict[str, Any] = {
            "machine": {"cpus": os.cpu_count(), "python": sys.version.split()[0]},
            "memories": memories,
            "clients": {"rest": clients - clients // 2, "mcp_sse": clients // 2},
            "seconds": seconds,
            "add_share": add_share,
            "settings": settings or {},
        }
        if memories:
            server.stop_only()
            from bench.harness.bulk_load import bulk_load

            report["bulk_load"] = bulk_load(
                data, total=memories, user_id=USER, app_name=CLIENT, turns=turns, cache=cache
            )
            due, builds = build_due(shard_counts(data)), len(index_builds(server))
            server.start()
            if due:
                report["index_build"] = wait_for_index(server, builds, 4 * 3600, renice=False)
        report["load_before"] = load()
        sampler = _sample(server.process.pid, seconds, profile) if profile else None
        server_cpu, own_cpu = cpu_seconds(server.process.pid), time.process_time()
        run = asyncio.run(drive(server, token, clients, seconds, add_share))
        report["ran_s"] = round(run.ran_s, 1)
        # Cores each side kept busy (warm-up included): on a 2-core machine the clients' share
        # is taken from the server.
        report["cores_busy"] = {
            "server": round((cpu_seconds(server.process.pid) - server_cpu) / run.ran_s, 2),
            "clients": round((time.process_time() - own_cpu) / run.ran_s, 2),
        }
        if sampler is not None and profile is not None:
            sampler.wait(60)
            report["profile"] = {"stacks": str(profile), "share_of_samples": profile_summary(profile)}
        report["load_after"] = load()
        report["rss_mb"] = round(rss_mb(server.process.pid), 1)
        report["queries_repeated"] = run.queries_repeated
        results: dict[str, dict[str, Any]] = {}
        for (transport, operation), tally in sorted(run.tallies.items()):
            entry = tally.report()
            if operation == "warm_up":  # a request or two a client: no percentiles
                entry = {key: value for key, value in entry.items() if not key.endswith("_ms")}
            results.setdefault(transport, {})[operation] = entry
        report["results"] = results
        report.update(lost_writes(server, token, run.acknowledged))
        report["errors"] = sum(t.errors for t in run.tallies.values())
        timed = [t for (_, operation), t in run.tallies.items() if operation != "warm_up"]
        answered = sum(len(t.seconds) + t.errors for t in timed)
        report["requests_per_s"] = round(answered / report["ran_s"], 1)
        report["targets_met"] = targets_met(report)
        return report
    except BaseException:
        print((server.data_dir / "server.log").read_text()[-4000:], file=sys.stderr)
        raise
    finally:
        server.stop()


def cpu_seconds(pid: int) -> float:
    """User and system CPU seconds of a process, all its threads (``/proc/PID/stat``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _sample(pid: int, seconds: float, out: Path) -> subprocess.Popen[bytes]:
    """py-spy recording ``pid`` for ``seconds`` into ``out`` (collapsed stacks, one a line)."""
    spy = Path(sys.executable).parent / "py-spy"
    if not spy.exists():
        raise SystemExit("--profile needs py-spy in this virtualenv: .venv/bin/pip install py-spy")
    command = [str(spy), "record", "--pid", str(pid), "--duration", str(int(seconds)), "--format", "raw"]
    command += ["--rate", "200", "--nonblocking", "--threads", "--output", str(out)]
    return subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def profile_summary(stacks: Path, top: int = 25) -> dict[str, float]:
    """The package's functions by their share of py-spy's samples (the function and what it
    called, each counted once a sample), largest first: where the server's threads spend."""
    counts: dict[str, int] = {}
    total = 0
    for line in stacks.read_text().splitlines():
        frames, _, n = line.rpartition(" ")
        total += int(n)
        names = {re.sub(r":\d+\)$", ")", f) for f in frames.split(";") if "claude_code_memory/" in f}
        for name in names:
            counts[name] = counts.get(name, 0) + int(n)
    ranked = sorted(counts.items(), key=lambda item: -item[1])[:top]
    return {name: round(n / total, 3) for name, n in ranked} if total else {}


def targets_met(report: dict[str, Any]) -> dict[str, bool]:
    """Each target of the run: an operation's p95 per transport, no errors, nothing lost."""
    met = {"no_errors": report["errors"] == 0, "nothing_lost": report["lost_writes"] == 0}
    for transport, operations in report["results"].items():
        for operation, limit in TARGET_P95_MS.items():
            entry = operations.get(operation)
            if entry is not None:
                met[f"{transport}_{operation}_p95"] = entry.get("p95_ms", float("inf")) <= limit
    return met


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--memories", type=int, default=10_000, help="memories of the user before the run")
    parser.add_argument("--clients", type=int, default=20, help="half REST, half MCP over SSE")
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--add-share", type=float, default=0.25, help="share of requests that add")
    parser.add_argument("--turns", type=int, default=20, help="turns per conversation of the fill")
    parser.add_argument(
        "--cache", type=Path, help="keep the fill's sentence embeddings here (bench/harness/bulk_load.py)"
    )
    parser.add_argument(
        "--profile", type=Path, help="sample the server with py-spy during the run; collapsed stacks here"
    )
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a config key for the server, e.g. hygiene.schedule_hours=0 (repeatable)",
    )
    parser.add_argument("--out", type=Path, help="write the JSON here too (default: bench/results/)")
    parser.add_argument("--no-out", action="store_true", help="print only")
    args = parser.parse_args()
    if any("=" not in item for item in args.set):
        parser.error("--set KEY=VALUE")
    if args.clients < 1 or args.seconds <= 0 or not 0 <= args.add_share <= 1:
        parser.error("--clients >= 1, --seconds > 0, 0 <= --add-share <= 1")
    report = load_run(
        memories=args.memories,
        clients=args.clients,
        seconds=args.seconds,
        add_share=args.add_share,
        turns=args.turns,
        cache=args.cache,
        profile=args.profile,
        settings=dict(item.split("=", 1) for item in args.set),
    )
    text = json.dumps(report, indent=2)
    print(text)
    if not args.no_out:
        out = args.out or RESULTS / f"load_{args.memories // 1000}k_{args.clients}c.json"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text + "\n")


if __name__ == "__main__":
    main()
