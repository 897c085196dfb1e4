"""The load run's harness (bench/perf/load.py), CI-sized: a real server with 200 memories, two
REST and two MCP (SSE) clients for a few seconds. Its JSON has every field the full run reports,
and on this small run nothing fails and no acknowledged write is lost. (Latency targets are the
full run's business: a timed test on a shared machine would be noise.)"""

from __future__ import annotations

import uuid

import httpx
import pytest

from bench.perf import load as bench_load


@pytest.mark.timeout(300)
@pytest.mark.integration  # starts its own server
def test_the_load_run_reports_every_operation_with_no_errors_and_nothing_lost() -> None:
    report = bench_load.load_run(memories=200, clients=4, seconds=4, add_share=0.4, turns=5)

    assert report["bulk_load"]["added"] == 200
    assert report["clients"] == {"rest": 2, "mcp_sse": 2}
    assert set(report["results"]) == {"rest", "mcp_sse"}, report["results"]
    for transport, operations in report["results"].items():
        assert set(operations) == {"add", "search", "warm_up"}, (transport, operations)
        # each client's one search and one add before the clock starts
        assert (operations["warm_up"]["count"], operations["warm_up"]["errors"]) == (4, 0), operations
        for operation in ("add", "search"):
            entry = operations[operation]
            assert entry["count"] > 0, (transport, operation, entry)
            assert entry["errors"] == 0, (transport, operation, entry)
            # (the harness's p50 is a median: over two samples it may be above the p95)
            assert entry["p50_ms"] > 0 and 0 < entry["p95_ms"] <= entry["p99_ms"], entry
    adds = sum(ops["add"]["count"] for ops in report["results"].values()) + 4  # one a client to warm up
    assert report["acknowledged_writes"] == adds > 4
    assert report["listed_memories"] == 200 + adds
    assert report["errors"] == 0
    assert report["lost_writes"] == 0
    assert set(report["targets_met"]) == {
        "no_errors",
        "nothing_lost",
        "rest_search_p95",
        "rest_add_p95",
        "mcp_sse_search_p95",
        "mcp_sse_add_p95",
    }
    assert report["targets_met"]["no_errors"] and report["targets_met"]["nothing_lost"]
    for key in ("load_before", "load_after", "rss_mb", "ran_s", "queries_repeated"):
        assert key in report, key


@pytest.mark.timeout(300)
@pytest.mark.integration  # starts its own server
def test_an_acknowledged_id_the_server_does_not_hold_counts_as_lost() -> None:
    """The lost-write check is not a formality: a stored id is found, an id never stored is lost."""
    server = bench_load.Server()
    try:
        token = server.token(bench_load.USER)
        stored = (
            httpx.post(
                f"{server.base}/api/v1/memories",
                json={"text": "The load test keeps this one"},
                headers={"Authorization": f"Bearer {token}"},
                timeout=60,
            )
            .raise_for_status()
            .json()["id"]
        )
        checked = bench_load.lost_writes(server, token, [stored, str(uuid.uuid4())])
    finally:
        server.stop()
    assert checked["acknowledged_writes"] == 2
    assert checked["listed_memories"] == 1
    assert checked["lost_writes"] == 1 and checked["found_by_id_only"] == 0


def test_errors_and_targets_are_counted() -> None:
    tally = bench_load.Tally()
    tally.seconds += [0.01, 0.02, 0.2]
    tally.error("500: boom")
    entry = tally.report()
    assert entry["count"] == 4 and entry["errors"] == 1 and entry["error_examples"] == ["500: boom"]
    assert bench_load.targets_met(
        {
            "errors": 1,
            "lost_writes": 2,
            "results": {"rest": {"search": {"p95_ms": 99.0}, "add": {"p95_ms": 201.0}}},
        }
    ) == {"no_errors": False, "nothing_lost": False, "rest_search_p95": True, "rest_add_p95": False}
