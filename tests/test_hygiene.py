"""Hygiene proposals: the pure rules, then end to end over REST and the CLI against the real server.

Approve a merge and undo it (the original memories come back with their ids, text and state
history), reject changes nothing and is not proposed again, the capture filter keeps junk out of
the consent queue and counts it, and the scheduled job runs inside the server.
"""

from __future__ import annotations

import json
import sqlite3
import time
import uuid
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from claude_code_memory.api.app import ServerParts
from claude_code_memory.config import load_settings
from claude_code_memory.engine.embedder import OnnxMiniLmEmbedder
from claude_code_memory.memories.hygiene.scan import Item, Thresholds, scan
from claude_code_memory.memories.server_parts import hygiene_of
from claude_code_memory.policy import hygiene_rules as rules
from tests.support import users
from tests.support.server import MemoryServer
from tests.support.servers import ApiServer, StartServer


# -- the pure rules ----------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("Thanks!", "acknowledgement"),
        ("ok go ahead", "acknowledgement"),
        ("Let me know if you have any other questions!", "boilerplate"),
        ("Exit code 0", "tool_noise"),
        ("[Request interrupted by user]", "tool_noise"),
        ("and then", "fragment"),
    ],
)
def test_junk_is_named(text: str, reason: str) -> None:
    assert rules.junk(text) == reason


@pytest.mark.parametrize(
    "text",
    [
        "Use pnpm.",
        "Thanks to the retry fix, deploys no longer flake.",
        "Exit code 137 means the container was OOM-killed.",
        "Port 5432 is reserved for Postgres.",
    ],
)
def test_what_only_looks_like_junk_is_kept(text: str) -> None:
    assert rules.junk(text) is None


def test_a_captured_turn_is_junk_only_when_every_message_is() -> None:
    assert rules.junk_capture("User: ok thanks\n\nAssistant: Happy to help!") == "acknowledgement"
    assert rules.junk_capture("User: ok\n\nAssistant: I moved the API to Postgres 16.") is None


def test_same_fact_and_its_look_alikes() -> None:
    assert rules.same_fact(
        "Nightly backups are kept for thirty days.", "Backups taken nightly are retained for thirty days."
    )
    assert not rules.same_fact("The API listens on port 8080.", "The API listens on port 9090.")
    assert not rules.same_fact("The user prefers tabs.", "The user does not want tabs.")
    assert not rules.same_fact(
        "Chen is the go-to person for questions about billing.",
        "Chen is the go-to person for questions about payments.",
    )


def test_supersedes_needs_the_same_subject() -> None:
    assert rules.supersedes("We moved the API to Postgres 16.", "The API runs on Postgres 14.")
    assert rules.supersedes("The sync job runs every 30 minutes.", "The sync job runs every 5 minutes.")
    assert not rules.supersedes(
        "The search service listens on port 9090.", "The billing service listens on port 8080."
    )
    assert not rules.supersedes("The API runs on Postgres 14.", "The API runs on Postgres 14 in production.")


@pytest.mark.parametrize(
    ("older", "newer"),
    [
        # Real changes told in chat: the speaker label is not the subject, lower case, no full stop.
        ("Bob: the API runs on Postgres 14", "Ann: we moved the API to Postgres 16"),
        ("Ann: the export runs every 5 minutes", "Ben: the export runs every 30 minutes now"),
        (
            "Kim: the wiki deploy script uses yarn",
            "Leo: fyi we switched the wiki deploy script from yarn to pnpm",
        ),
        ("Ivo: the forum team lead is Zoe", "Jun: Bob is the forum team lead now"),
        ("Ann: the API listens on port 8080", "Ann: heads up, the API now listens on port 9090"),
    ],
)
def test_a_change_written_as_chat_supersedes(older: str, newer: str) -> None:
    assert rules.supersedes(newer, older)


@pytest.mark.parametrize(
    ("older", "newer"),
    [
        # The same two people greeting, asking, thanking and telling news: words of change and
        # the other's name first, but no statement whose value a later one replaces.
        (
            "Ann: Hey Ben! Good to see you! How have you been?",
            "Ann: Hey Ben! Long time no talk. So much has changed!",
        ),
        (
            "Ann: Hi Ben, how was the trip to the coast?",
            "Ann: Hi Ben, how is the new flat now that you moved in?",
        ),
        (
            "Ann: Thanks, Ben! Your advice really helped.",
            "Ann: Thanks, Ben! I switched my routine and it helped.",
        ),
        (
            "Ann: I went hiking with my sister last weekend. The view was amazing!",
            "Ann: I went kayaking with my cousins on Saturday. Now I want to go every month!",
        ),
        # Several sentences of chat hide the subject: even a real-looking change is not compared.
        ("Ann: the cache runs on Redis 6", "Ben: Long day! Anyway, we moved the cache to Redis 7."),
        # "I" is the speaker: one person's news does not replace another's.
        ("Ann: I run a 5 km loop most mornings.", "Ben: I run a 10 km loop most mornings."),
        ("Ann: My team uses Jira for tickets.", "Ben: My team moved from Jira to Linear."),
        # A question or a plan about a change is not the change.
        ("Ann: the API runs on Postgres 14", "Ben: should we move the API to Postgres 16?"),
        ("Ann: the API listens on port 8080", "Ben: we could move the API to port 9090"),
        ("Ann: the worker runs on Python 3.10", "Ben: we will upgrade the worker to Python 3.12"),
    ],
)
def test_chat_turns_do_not_supersede(older: str, newer: str) -> None:
    assert not rules.supersedes(newer, older)


def test_the_same_speaker_updating_a_number_about_themselves_supersedes() -> None:
    assert rules.supersedes("Ann: I run a 10 km loop most mornings.", "Ann: I run a 5 km loop most mornings.")


def test_the_scan_over_captured_chat_proposes_only_the_change() -> None:
    """The vector side and the rule together, on real embeddings: greetings between the same two
    people are near each other in embedding space, and only the told change is proposed."""
    texts = [
        "Ann: Hey Ben! Good to see you! How have you been?",
        "Bob: the API runs on Postgres 14",
        "Ann: the export job runs every 5 minutes",
        "Ann: Hey Ben! Long time no talk. So much has changed since then!",
        "Ben: Thanks, Ann! Your advice about the interview really helped.",
        "Ann: we moved the API to Postgres 16",
        "Ben: the export job runs every 30 minutes now",
    ]
    start = datetime(2026, 1, 1)
    items = [
        Item(id=f"t{i}", text=text, created_at=start + timedelta(hours=i)) for i, text in enumerate(texts)
    ]
    vectors = OnnxMiniLmEmbedder(cache_size=0).embed_batch(texts)
    findings = scan(items, vectors, Thresholds(), start + timedelta(days=1))
    assert {(f.ids[0], f.keep) for f in findings if f.kind == "superseded"} == {("t1", "t5"), ("t2", "t6")}
    assert not [f for f in findings if f.kind != "superseded"]


# -- over REST ---------------------------------------------------------------------------------
# -- the job, in process ----------------------------------------------------------------------
def test_the_job_compares_stored_vectors_and_embeds_only_a_lost_one(tmp_path: Path) -> None:
    settings = load_settings(
        config_path=None,
        environ={},
        overrides={"server.data_dir": str(tmp_path / "data"), "hygiene.schedule_hours": 0},
    )
    parts = ServerParts(settings)
    try:
        service = parts.service
        ids = [
            service.writes.add_memory(user_id="ann", app_name="test", text=text)[0]["id"]
            for text in (
                "The deploy script lives in scripts/deploy.sh",
                "the deploy script lives in scripts/deploy.sh!",
                "Ann prefers tabs over spaces in Go code",
            )
        ]
        embedder: Any = parts.engine.embedder
        embedder._cache.clear()  # what the job embeds now would be a cache miss
        misses = embedder.cache_misses
        report = hygiene_of(service).run("ann")
        assert report.proposed["duplicate"] == 1
        assert report.embedded == 0 and embedder.cache_misses == misses  # read, not embedded
        assert {"load", "vectors", "neighbours", "rules", "write"} <= set(report.to_dict()["step_seconds"])

        parts.engine.store.delete(ids[2])  # a point lost (as in a crash): its text is embedded
        report = hygiene_of(service).run("ann")
        assert report.embedded == 1 and embedder.cache_misses == misses + 1
        assert report.proposed["duplicate"] == 0  # proposed already, not again
    finally:
        parts.close()


def test_a_run_reads_only_the_newest_memories_of_a_user(tmp_path: Path) -> None:
    """hygiene.max_memories bounds a run: neighbours compare every pair of what it reads."""
    settings = load_settings(
        config_path=None,
        environ={},
        overrides={
            "server.data_dir": str(tmp_path / "data"),
            "hygiene.schedule_hours": 0,
            "hygiene.max_memories": 100,
        },
    )
    parts = ServerParts(settings)
    try:
        service = parts.service
        texts = [
            "The deploy script lives in scripts/deploy.sh",
            "the deploy script lives in scripts/deploy.sh!",
        ]
        texts += [f"Ticket {n} is about the {n}th service of the {n % 7} cluster" for n in range(100)]
        for text in texts:  # the duplicate pair first: the oldest two
            service.writes.add_memory(user_id="ann", app_name="test", text=text)
        report = hygiene_of(service).run("ann")
        assert report.memories == 100 and report.proposed["duplicate"] == 0
        service.settings.hygiene.max_memories = 102
        report = hygiene_of(service).run("ann")
        assert report.memories == 102 and report.proposed["duplicate"] == 1
    finally:
        parts.close()


@pytest.fixture(scope="module")
def memory_server(start_module_server: StartServer) -> ApiServer:
    # Only on demand here: the scheduled run has its own server below.
    return start_module_server(env={"CCMEM_HYGIENE__SCHEDULE_HOURS": "0"}, in_process=True)


class User(users.User):
    def __init__(self, server: ApiServer, name: str) -> None:
        super().__init__(server, name, timeout=120)

    def add(self, text: str) -> str:
        response = self.http.post("/api/v1/memories", json={"text": text, "app": "notes", "infer": False})
        assert response.status_code == 200, response.text
        body = response.json()
        return str(body.get("id") or body["results"][0]["id"])

    def memory(self, memory_id: str) -> dict[str, Any]:
        response = self.http.get(f"/api/v1/memories/{memory_id}")
        assert response.status_code == 200, response.text
        return response.json()

    def run(self) -> dict[str, Any]:
        response = self.http.post("/api/v1/hygiene/run", json={})
        assert response.status_code == 200, response.text
        return response.json()

    def proposals(self, **params: Any) -> list[dict[str, Any]]:
        response = self.http.get("/api/v1/hygiene/proposals", params=params)
        assert response.status_code == 200, response.text
        return response.json()["items"]


def history(server: ApiServer, memory_id: str) -> list[tuple[str, str]]:
    """The memory's state changes, oldest first, read from the server's SQLite file."""
    with sqlite3.connect(f"file:{server.data_dir / 'memory.db'}?mode=ro", uri=True) as db:
        rows = db.execute(
            "SELECT old_state, new_state FROM memory_status_history WHERE memory_id = ? ORDER BY changed_at",
            (uuid.UUID(memory_id).hex,),
        ).fetchall()
    return [(old, new) for old, new in rows]


DUPLICATES = (
    "Nightly backups of the orders database are kept for thirty days.",
    "Backups of the orders database taken nightly are retained for thirty days.",
)


def test_approve_a_merge_then_undo_it(memory_server: ApiServer) -> None:
    alice = User(memory_server, "alice")
    first, second = (alice.add(text) for text in DUPLICATES)
    other = alice.add("The orders service is written in Go and deployed with Helm.")
    before = {mid: alice.memory(mid) for mid in (first, second)}

    report = alice.run()
    assert report["proposed"]["duplicate"] == 1, report
    (merge,) = alice.proposals(kind="duplicate")
    assert set(merge["memory_ids"]) == {first, second} and other not in merge["memory_ids"]
    assert merge["reason"] and merge["preview"]["result"] in DUPLICATES
    keep = merge["keep_id"]
    (gone,) = {first, second} - {keep}

    reads_before = alice.http.get(f"/api/v1/memories/{gone}/access-log").json()["total"]
    applied = alice.http.post(f"/api/v1/hygiene/proposals/{merge['id']}/approve")
    assert applied.status_code == 200, applied.text
    assert applied.json()["status"] == "applied" and applied.json()["undo_until"]
    assert alice.memory(gone)["state"] == "archived"
    kept = alice.memory(keep)
    assert kept["state"] == "active"
    assert [entry["id"] for entry in kept["metadata_"]["merged_from"]] == [gone]
    hits = alice.http.post("/api/v1/memories/search", json={"query": "orders backups", "limit": 5}).json()
    assert gone not in {hit["id"] for hit in hits["results"]}

    # Applied once only.
    again = alice.http.post(f"/api/v1/hygiene/proposals/{merge['id']}/approve")
    assert again.status_code == 409, again.text

    undone = alice.http.post(f"/api/v1/hygiene/proposals/{merge['id']}/undo")
    assert undone.status_code == 200, undone.text
    assert undone.json()["status"] == "undone"
    for mid in (first, second):
        now = alice.memory(mid)
        assert now["state"] == "active"
        assert now["text"] == before[mid]["text"]
        assert now["created_at"] == before[mid]["created_at"]
        assert "merged_from" not in (now["metadata_"] or {})
    assert history(memory_server, gone) == [("active", "archived"), ("archived", "active")]
    log = alice.http.get(f"/api/v1/memories/{gone}/access-log")
    assert log.status_code == 200 and log.json()["total"] >= reads_before, log.text
    hits = alice.http.post("/api/v1/memories/search", json={"query": "orders backups", "limit": 5}).json()
    assert gone in {hit["id"] for hit in hits["results"]}
    assert alice.http.post(f"/api/v1/hygiene/proposals/{merge['id']}/undo").status_code == 409


def test_reject_changes_nothing_and_is_not_proposed_again(memory_server: ApiServer) -> None:
    bob = User(memory_server, "bob")
    junk = bob.add("ok thanks")
    fact = bob.add("The billing API runs on Postgres 14.")
    newer = bob.add("We moved the billing API to Postgres 16.")
    bob.run()
    proposals = {p["kind"]: p for p in bob.proposals()}
    assert proposals["junk"]["memory_ids"] == [junk]
    assert proposals["superseded"]["memory_ids"] == [fact, newer]
    before = bob.memory(junk)

    rejected = bob.http.post(f"/api/v1/hygiene/proposals/{proposals['junk']['id']}/reject")
    assert rejected.status_code == 200 and rejected.json()["status"] == "rejected"
    after = bob.memory(junk)
    assert after == before
    assert history(memory_server, junk) == []
    bob.run()
    assert [p for p in bob.proposals() if p["kind"] == "junk"] == []

    # Superseded: the older is archived and linked to the newer.
    bob.http.post(f"/api/v1/hygiene/proposals/{proposals['superseded']['id']}/approve").raise_for_status()
    assert bob.memory(fact)["state"] == "archived"
    assert bob.memory(fact)["metadata_"]["superseded_by"] == newer
    assert bob.memory(newer)["metadata_"]["supersedes"] == [fact]


def test_bad_input_and_other_users(memory_server: ApiServer) -> None:
    carol, dave = User(memory_server, "carol"), User(memory_server, "dave")
    carol.add("thanks!")
    carol.run()
    (proposal,) = carol.proposals()
    assert carol.http.post("/api/v1/hygiene/proposals/not-a-uuid/approve").status_code == 422
    assert carol.http.post(f"/api/v1/hygiene/proposals/{uuid.uuid4()}/approve").status_code == 404
    # Another user's proposal is not found, and stays open.
    assert dave.http.post(f"/api/v1/hygiene/proposals/{proposal['id']}/approve").status_code == 404
    assert carol.http.post(f"/api/v1/hygiene/proposals/{proposal['id']}/undo").status_code == 409
    # A junk proposal keeps no memory whose text could be edited.
    edit = carol.http.post(f"/api/v1/hygiene/proposals/{proposal['id']}/approve", json={"text": "x y z"})
    assert edit.status_code == 422, edit.text
    assert carol.proposals()[0]["status"] == "open"
    assert carol.http.get("/api/v1/hygiene/proposals", params={"kind": "nonsense"}).status_code == 422
    admin = memory_server.client(memory_server.admin_token, timeout=30)
    assert admin.get("/api/v1/hygiene/proposals").status_code == 403
    assert admin.get("/api/v1/hygiene", params={"user_id": carol.id}).json()["open_by_kind"]["junk"] == 1


def test_the_capture_filter_keeps_junk_out_of_the_consent_queue(memory_server: ApiServer) -> None:
    erin = User(memory_server, "erin")

    def capture(user: str, assistant: str) -> dict[str, Any]:
        messages = [{"role": "user", "content": user}, {"role": "assistant", "content": assistant}]
        response = erin.http.post("/api/v1/capture", json={"app": "claude-code", "messages": messages})
        assert response.status_code == 200, response.text
        return response.json()

    assert capture("ok thanks", "Happy to help!") == {
        "status": "filtered",
        "id": None,
        "ids": [],
        "state": None,
        "memory": None,
        "reason": "junk: acknowledgement",
    }
    assert capture("Exit code 0", "(no output)")["status"] == "filtered"
    assert capture("Which port does the API use?", "The API listens on port 8443.")["status"] == "pending"
    pending = erin.http.get("/api/v1/consent/pending").json()
    assert pending["total"] == 1
    status = erin.http.get("/api/v1/hygiene").json()
    assert status["captures_filtered"] == 2
    assert status["captures_filtered_by_reason"] == {"acknowledgement": 1, "tool_noise": 1}


def test_the_cli_lists_and_decides(shared_server: MemoryServer) -> None:
    memory_server = shared_server  # the CLI talks to a server over the network; no schedule runs in a test
    frank = User(memory_server, "frank")
    junk = frank.add("lgtm")
    frank.run()
    env = {"CCMEM_TOKEN": frank.token}
    listed = memory_server.ccmem(
        "hygiene", "list", "--json", "--url", memory_server.base_url, "--token", frank.token
    )
    (proposal,) = json.loads(listed.stdout)["items"]
    assert proposal["memory_ids"] == [junk]
    shown = memory_server.ccmem("hygiene", "list", "--url", memory_server.base_url, "--token", frank.token)
    assert "junk" in shown.stdout and proposal["id"] in shown.stdout
    approved = memory_server.ccmem(
        "hygiene", "approve", proposal["id"], "--url", memory_server.base_url, "--token", env["CCMEM_TOKEN"]
    )
    assert "applied" in approved.stdout
    assert frank.memory(junk)["state"] == "archived"
    failed = memory_server.ccmem(
        "hygiene",
        "reject",
        proposal["id"],
        "--url",
        memory_server.base_url,
        "--token",
        frank.token,
        check=False,
    )
    assert failed.returncode == 1 and "not open" in failed.stderr


def test_the_scheduled_job_runs_in_the_server(start_server: Any) -> None:
    # 0.0005 hours: a run every 1.8 seconds.
    server = start_server(env={"CCMEM_HYGIENE__SCHEDULE_HOURS": "0.0005"}, in_process=True)
    gina = User(server, "gina")
    gina.add("sounds good")
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not gina.proposals():
        time.sleep(0.5)
    (proposal,) = gina.proposals()
    assert proposal["kind"] == "junk"
    status = gina.http.get("/api/v1/hygiene").json()
    assert status["next_run_at"] is not None and status["schedule_hours"] == 0.0005
