"""API replicas on one real PostgreSQL (Debian's) and one Qdrant server (docs/team.md).

Two real ``ccmem serve`` processes share a fresh PostgreSQL database and a :class:`FakeQdrant`
(Qdrant's REST wire format; no Qdrant server can run here). What one replica is told, the other
answers alike: a memory written on one is read on the other; a hook session's "once per session"
holds whichever replica a hook reaches, and so does the prompt a Stop captures; an MCP caller's
``set_project`` on one replica is the current project on the other; a scheduled job runs on one
replica at a time, under its lease, and another takes it over when the holder is killed; a
replica killed with SIGKILL in the middle of writes loses no write it acknowledged; Caddy with
the team profile's Caddyfile serves both over TLS through a kill; a text forgotten through one
replica leaves the other's local mem0 history file when that one purges; ``ccmem serve
--replicas 2`` starts both and restarts a killed one; replicas on the embedded stores are refused.
"""

from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import anyio
import httpx
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from qdrant_client import models

from tests.support.edge import CaddyEdge
from tests.support.fake_qdrant import FakeQdrant
from tests.support.processes import free_port, http_ok, wait_until
from tests.support.server import START_TIMEOUT, MemoryServer, ccmem_bin
from tests.support.windows import clear_of_the_minute_edge

pytestmark = [pytest.mark.postgres, pytest.mark.timeout(600)]

#: Short enough for a test to see a takeover: the hygiene run every 1.8 s, leases of 3 s.
LEASE_SECONDS = 3
HYGIENE_HOURS = 0.0005
JOB = "hygiene run"


def replica_env(postgres_url: str, qdrant: FakeQdrant, admin_token: str) -> dict[str, str]:
    return {
        "DATABASE_URL": postgres_url,
        "QDRANT_URL": qdrant.url,
        "CCMEM_ADMIN_TOKEN": admin_token,
        "CCMEM_SERVER__REPLICAS": "2",
        "CCMEM_SERVER__LEASE_SECONDS": str(LEASE_SECONDS),
        "CCMEM_HYGIENE__SCHEDULE_HOURS": str(HYGIENE_HOURS),
        "CCMEM_PRIVACY__REQUIRE_CONSENT": "false",
    }


@pytest.fixture(scope="module")
def qdrant() -> Iterator[FakeQdrant]:
    with FakeQdrant() as server:
        yield server


@pytest.fixture(scope="module")
def replicas(
    tmp_path_factory: pytest.TempPathFactory, _postgres_cluster: Any, qdrant: FakeQdrant
) -> Iterator[list[MemoryServer]]:
    database = _postgres_cluster.new_database()
    admin = uuid.uuid4().hex
    servers = [
        MemoryServer(tmp_path_factory.mktemp(f"replica{i}"), env=replica_env(database.url, qdrant, admin))
        for i in range(2)
    ]
    for server in servers:
        server.admin_token = admin
    # Started together: the migration runs once, under PostgreSQL's advisory lock.
    threads = [threading.Thread(target=server.start) for server in servers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for server in servers:
        assert server.process is not None and server.process.poll() is None, server.log()
    yield servers
    for server in servers:
        server.stop()
    database.drop()


def user_on(servers: list[MemoryServer]) -> tuple[str, list[httpx.Client]]:
    user = f"u{uuid.uuid4().hex[:10]}"
    token = servers[0].make_token(user)
    return user, [server.client(token, timeout=60) for server in servers]


def add(client: httpx.Client, text: str, **extra: Any) -> str:
    response = client.post("/api/v1/memories/", json={"text": text, "app": "notes", **extra})
    assert response.status_code == 200, response.text
    body = response.json()
    return str(body.get("id") or body["results"][0]["id"])


def test_a_write_on_one_replica_is_read_on_the_other(
    replicas: list[MemoryServer], qdrant: FakeQdrant
) -> None:
    _, (a, b) = user_on(replicas)
    memory_id = add(a, "The staging database runs on port 6543 behind pgbouncer")
    found = b.post("/api/v1/memories/search", json={"query": "which port does staging's database use"})
    assert found.status_code == 200, found.text
    assert memory_id in [hit["id"] for hit in found.json()["results"]]
    assert b.get(f"/api/v1/memories/{memory_id}").json()["text"].startswith("The staging database")
    # One vector store: the point is on the Qdrant server, not in a replica's own files.
    assert qdrant.store.retrieve("memories", ids=[memory_id])
    # An edit on B is what A reads next (no replica serves a copy of its own).
    edited = b.put(f"/api/v1/memories/{memory_id}", json={"memory_content": "Staging's database: port 7000"})
    assert edited.status_code == 200, edited.text
    assert a.get(f"/api/v1/memories/{memory_id}").json()["text"] == "Staging's database: port 7000"


def test_a_token_s_rate_limit_counts_on_every_replica_together(
    tmp_path_factory: pytest.TempPathFactory, _postgres_cluster: Any, qdrant: FakeQdrant
) -> None:
    """With replicas, the rate-limit counters live in the shared database: a token's 6th request
    in a 5-a-minute window is refused by whichever replica it reaches (on each replica's own
    counters, 3 + 3 would all pass)."""
    database = _postgres_cluster.new_database()
    admin = uuid.uuid4().hex
    env = replica_env(database.url, qdrant, admin) | {
        "CCMEM_SERVER__RATE_LIMIT__LOOPBACK": "true",  # the test's requests come from this machine
        "CCMEM_SERVER__RATE_LIMIT__PER_TOKEN": "5/minute",
    }
    servers = [MemoryServer(tmp_path_factory.mktemp(f"limited{i}"), env=env) for i in range(2)]
    try:
        for server in servers:
            server.admin_token = admin
            server.start()
        token = servers[0].make_token(f"u{uuid.uuid4().hex[:10]}")
        clear_of_the_minute_edge()
        answers = []
        for turn in range(6):
            with servers[turn % 2].client(token) as client:
                answers.append(client.get("/api/v1/memories/", params={"size": 1}))
        assert [answer.status_code for answer in answers[:5]] == [200] * 5, [a.text for a in answers]
        assert answers[5].status_code == 429 and int(answers[5].headers["Retry-After"]) >= 1
    finally:
        for server in servers:
            server.stop()
        database.drop()


def test_a_hook_session_is_given_a_memory_once_across_replicas(replicas: list[MemoryServer]) -> None:
    _, (a, b) = user_on(replicas)
    remembered = add(a, "Deploys go through the release-train job every Tuesday at noon")
    session = f"s-{uuid.uuid4().hex}"
    query = {"query": "when do deploys happen, which job runs the release train", "session_id": session}
    first = a.post("/api/v1/hooks/recall", json=query)
    assert first.status_code == 200, first.text
    assert [m["id"] for m in first.json()["memories"]] == [remembered]
    # The next prompt of the same session reaches the other replica: already given, not again.
    again = b.post("/api/v1/hooks/recall", json=query)
    assert again.status_code == 200, again.text
    assert again.json()["memories"] == []
    # Another session is given it on either replica.
    other = b.post("/api/v1/hooks/recall", json={**query, "session_id": f"s-{uuid.uuid4().hex}"})
    assert [m["id"] for m in other.json()["memories"]] == [remembered]

    # A prompt kept by one replica is captured by the Stop the other answers.
    hook = {"session_id": session, "cwd": "/work/shop", "transcript_path": "/tmp/t.jsonl"}
    prompt = f"Name the queue worker {uuid.uuid4().hex[:6]} after the release train"
    submitted = a.post(
        "/api/v1/hooks/claude-code", json={**hook, "hook_event_name": "UserPromptSubmit", "prompt": prompt}
    )
    assert submitted.status_code == 200, submitted.text
    stop = {
        **hook,
        "hook_event_name": "Stop",
        "last_assistant_message": "Named it.",
        "stop_hook_active": False,
    }
    assert b.post("/api/v1/hooks/claude-code", json=stop).status_code == 200
    listed = a.get("/api/v1/memories/", params={"size": 100}).json()["items"]
    assert any(prompt in item["content"] for item in listed), listed
    # Taken once: a second Stop (on either replica) captures nothing more.
    assert a.post("/api/v1/hooks/claude-code", json=stop).status_code == 200
    again_listed = a.get("/api/v1/memories/", params={"size": 100}).json()["items"]
    assert sum(prompt in item["content"] for item in again_listed) == 1


def test_set_project_on_one_replica_is_the_current_project_on_the_other(replicas: list[MemoryServer]) -> None:
    user = f"u{uuid.uuid4().hex[:10]}"
    token = replicas[0].make_token(user)
    project = f"shop-{uuid.uuid4().hex[:6]}"

    async def call(server: MemoryServer, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        url = f"{server.base_url}/mcp/claude-code/http/{user}"
        async with (
            httpx.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60) as http,
            Client(streamable_http_client(url, http_client=http)) as session,
        ):
            result = await session.call_tool(tool, arguments)
        assert not result.is_error, result
        return json.loads(result.content[0].text)  # type: ignore[union-attr]

    assert anyio.run(call, replicas[0], "set_project", {"project": project}) == {"project": project}
    added = anyio.run(call, replicas[1], "add_memories", {"text": "The shop's checkout uses Stripe webhooks"})
    memory_id = added["results"][0]["id"]
    row = replicas[0].client(token).get(f"/api/v1/memories/{memory_id}").json()
    assert row["provenance"]["project"] == project, row


def _jobs(server: MemoryServer) -> dict[str, Any]:
    return httpx.get(f"{server.base_url}/health", timeout=10).json()["jobs"][JOB]


def test_a_job_runs_on_one_replica_and_another_takes_it_over(replicas: list[MemoryServer]) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        states = [_jobs(server) for server in replicas]
        if sum(s["runs"] for s in states) >= 3 and all(s["skipped"] for s in states if not s["runs"]):
            break
        time.sleep(0.5)
    states = [_jobs(server) for server in replicas]
    running = [i for i, s in enumerate(states) if s["runs"]]
    assert len(running) == 1, states  # several runs, all on one replica
    holder = running[0]
    assert states[holder]["holds_lease"] and not states[1 - holder]["holds_lease"], states
    assert states[1 - holder]["skipped"] >= 1, states

    other = replicas[1 - holder]
    before = _jobs(other)["runs"]
    killed = replicas[holder]
    assert killed.process is not None
    killed.process.send_signal(signal.SIGKILL)  # no release: the lease must lapse
    killed.process.wait(timeout=30)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and _jobs(other)["runs"] < before + 2:
        time.sleep(0.5)
    taken = _jobs(other)
    assert taken["runs"] >= before + 2 and taken["holds_lease"], taken
    killed.start()  # back for the next test


def test_killing_a_replica_during_writes_loses_nothing_acknowledged(
    replicas: list[MemoryServer], qdrant: FakeQdrant
) -> None:
    user, (a, b) = user_on(replicas)
    acknowledged: list[str] = []
    errors: list[str] = []
    stop = threading.Event()
    lock = threading.Lock()

    def writer(client: httpx.Client, name: str) -> None:
        n = 0
        while not stop.is_set():
            n += 1
            try:
                response = client.post(
                    "/api/v1/memories/", json={"text": f"{name} fact {n}: {uuid.uuid4().hex}", "app": "notes"}
                )
            except httpx.HTTPError as exc:
                errors.append(type(exc).__name__)
                time.sleep(0.05)
                continue
            if response.status_code == 200:
                body = response.json()
                with lock:
                    acknowledged.append(str(body.get("id") or body["results"][0]["id"]))
            else:
                errors.append(str(response.status_code))

    threads = [
        threading.Thread(target=writer, args=(client, f"w{i}"), daemon=True)
        for i, client in enumerate((a, a, b, b))
    ]
    for thread in threads:
        thread.start()
    time.sleep(4)
    victim = replicas[0]
    assert victim.process is not None
    victim.process.send_signal(signal.SIGKILL)
    victim.process.wait(timeout=30)
    time.sleep(3)
    stop.set()
    for thread in threads:
        thread.join(timeout=60)
    assert len(acknowledged) >= 10, (len(acknowledged), errors)
    assert errors, "writes to the killed replica must have failed"

    # Every acknowledged write is on the surviving replica, in PostgreSQL and on the Qdrant server.
    survivor = b
    for memory_id in acknowledged:
        response = survivor.get(f"/api/v1/memories/{memory_id}")
        assert response.status_code == 200, (memory_id, response.text)
    points = qdrant.store.retrieve("memories", ids=acknowledged)
    assert {str(p.id) for p in points} == set(acknowledged)
    condition = models.Filter(
        must=[models.FieldCondition(key="user_id", match=models.MatchValue(value=user))]
    )
    assert qdrant.store.count("memories", count_filter=condition, exact=True).count >= len(acknowledged)
    victim.start()


def test_replicas_need_postgresql_and_a_qdrant_server(tmp_path: Any) -> None:
    """The embedded stores are one process's: asked for replicas on them, ccmem refuses and says why."""
    server = MemoryServer(tmp_path / "one", env={"CCMEM_SERVER__REPLICAS": "2"})
    completed = server.ccmem("serve", "--port", str(free_port()), check=False, timeout=120)
    assert completed.returncode == 1, completed.stdout + completed.stderr
    assert "server.replicas = 2 needs PostgreSQL" in completed.stderr
    server = MemoryServer(tmp_path / "two", env={"DATABASE_URL": "postgresql://x:y@127.0.0.1:1/z"})
    completed = server.ccmem("serve", "--replicas", "2", "--port", str(free_port()), check=False, timeout=120)
    assert completed.returncode == 1
    assert "needs a Qdrant server: set QDRANT_URL" in completed.stderr
    assert ccmem_bin().exists()


class ReplicaSet(MemoryServer):
    """``ccmem serve --replicas 2``: one supervising process, replicas on ``port`` and ``port + 1``."""

    def start(self, *, degraded: bool = False) -> ReplicaSet:
        command = [str(ccmem_bin()), "serve", "--replicas", "2", "--host", "127.0.0.1"]
        command += ["--port", str(self.port), "--data-dir", str(self.data_dir)]
        ports = (self.port, self.port + 1)
        self.launch(
            command,
            self.env,
            lambda: all(http_ok(f"http://127.0.0.1:{port}/health")() for port in ports),
            "ccmem serve --replicas 2",
            START_TIMEOUT * 2,
        )
        return self

    def replica_pid(self, index: int) -> int:
        """The newest pid the supervisor printed for replica ``index``."""
        found = re.findall(rf"replica {index} \(pid (\d+)\)", self.log_path.read_text())
        assert found, self.log()
        return int(found[-1])


def test_ccmem_serve_replicas_starts_two_and_restarts_a_killed_one(
    tmp_path: Any, postgres_url: str, qdrant: FakeQdrant
) -> None:
    replica_set = ReplicaSet(tmp_path, env=replica_env(postgres_url, qdrant, uuid.uuid4().hex))
    replica_set.admin_token = replica_set.extra_env["CCMEM_ADMIN_TOKEN"]
    with replica_set:
        token = replica_set.make_token("alice")
        first = httpx.Client(
            base_url=f"http://127.0.0.1:{replica_set.port}", headers={"Authorization": f"Bearer {token}"}
        )
        second = httpx.Client(
            base_url=f"http://127.0.0.1:{replica_set.port + 1}", headers={"Authorization": f"Bearer {token}"}
        )
        memory_id = add(first, "The on-call rota lives in the ops wiki")
        assert second.get(f"/api/v1/memories/{memory_id}", timeout=30).status_code == 200
        killed = replica_set.replica_pid(1)
        os.kill(killed, signal.SIGKILL)
        wait_until(
            lambda: (
                replica_set.replica_pid(1) != killed
                and http_ok(f"http://127.0.0.1:{replica_set.port + 1}/health")()
            ),
            timeout=START_TIMEOUT * 2,
            process=replica_set.process,
            what="replica 1 started again",
            log=replica_set.log_path,
        )
        assert second.get(f"/api/v1/memories/{memory_id}", timeout=30).status_code == 200
        first.close()
        second.close()
    # Stopping the supervisor stopped both replicas.
    with pytest.raises(httpx.HTTPError):
        httpx.get(f"http://127.0.0.1:{replica_set.port}/health", timeout=5)


def test_the_edge_serves_both_replicas_over_tls_through_a_kill(
    replicas: list[MemoryServer], tmp_path: Any
) -> None:
    """deploy/Caddyfile in front of the replicas: TLS from Caddy's local CA, one address, and a
    replica killed behind it costs no acknowledged write."""
    edge = CaddyEdge(tmp_path / "edge", [f"127.0.0.1:{server.port}" for server in replicas]).start()
    try:
        user = f"u{uuid.uuid4().hex[:10]}"
        token = replicas[0].make_token(user)
        with pytest.raises(httpx.ConnectError):  # not trusted without Caddy's root certificate
            httpx.get(f"{edge.base_url}/health", timeout=10)
        client = edge.client(token)
        acknowledged = [add(client, f"Edge fact {n}: {uuid.uuid4().hex}") for n in range(6)]
        victim = replicas[1]
        assert victim.process is not None
        victim.process.send_signal(signal.SIGKILL)
        victim.process.wait(timeout=30)
        failures = 0
        for n in range(20):  # round robin would send half of these to the dead replica
            try:
                acknowledged.append(add(client, f"After the kill {n}: {uuid.uuid4().hex}"))
            except (AssertionError, httpx.HTTPError):
                failures += 1
        assert failures == 0, edge.log_path.read_text()[-2000:]
        for memory_id in acknowledged:
            assert replicas[0].client(token).get(f"/api/v1/memories/{memory_id}").status_code == 200
        client.close()
    finally:
        edge.stop()
        replicas[1].start()


def test_a_forgotten_text_leaves_the_other_replicas_history_file(replicas: list[MemoryServer]) -> None:
    """mem0's history file is each replica's own: a memory written through A and deleted through
    B leaves its text in A's file until A purges it (its hourly job, or a reconcile sent to it)."""
    _, (a, b) = user_on(replicas)
    secret_text = f"The vault recovery phrase hint is {uuid.uuid4().hex}"
    memory_id = add(a, secret_text)
    history = replicas[0].data_dir / "mem0" / "history.db"

    def in_history() -> bool:
        with sqlite3.connect(history) as connection:
            rows = connection.execute("SELECT COUNT(*) FROM history WHERE memory_id = ?", (memory_id,))
            return bool(rows.fetchone()[0])

    assert in_history()
    deleted = b.request("DELETE", "/api/v1/memories/", json={"memory_ids": [memory_id]})
    assert deleted.status_code == 200, deleted.text
    assert in_history(), "A's file is A's own: B's delete cannot reach it"
    purged = httpx.post(
        f"{replicas[0].base_url}/api/v1/admin/reconcile", headers=replicas[0].admin_headers(), timeout=120
    )
    assert purged.status_code == 200, purged.text
    assert not in_history()
    assert secret_text.encode() not in history.read_bytes()
