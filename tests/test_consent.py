"""Consent against the real server: captures wait as pending items only their owner sees;
approve (optionally edited), reject, standing rules, bulk decisions, the decision log and the
`ccmem consent` CLI. One server for the module; every test works with its own users."""

from __future__ import annotations

import json
import uuid
from typing import Any

import httpx
import pytest

from tests.support import users
from tests.support.server import MemoryServer
from tests.support.servers import ApiServer, StartServer

pytestmark = pytest.mark.timeout(300)

FAKE_GITHUB_TOKEN = "ghp_" + "Zq8Xw2Lp4Rt6Yv1Nb3Mc5Kd7Hf9Gj0Sa2De4Fg"


@pytest.fixture(scope="module")
def memory_server(start_module_server: StartServer) -> ApiServer:
    return start_module_server(in_process=True)


class User(users.User):
    def capture(self, text: str, *, app: str = "claude-code", **provenance: Any) -> httpx.Response:
        messages = [{"role": "user", "content": text}, {"role": "assistant", "content": "Noted."}]
        return self.http.post("/api/v1/capture", json={"app": app, "messages": messages, **provenance})

    def pending_capture(self, text: str, **provenance: Any) -> str:
        response = self.capture(text, **provenance)
        assert response.status_code == 200, response.text
        body = response.json()
        assert body["status"] == "pending", body
        return str(body["id"])

    def pending(self, **params: Any) -> dict[str, Any]:
        response = self.http.get("/api/v1/consent/pending", params=params)
        assert response.status_code == 200, response.text
        return response.json()

    def pending_ids(self) -> list[str]:
        return [item["id"] for item in self.pending()["items"]]

    def search(self, query: str) -> list[dict[str, Any]]:
        response = self.http.post("/api/v1/memories/search", json={"query": query, "limit": 20})
        assert response.status_code == 200, response.text
        return response.json()["results"]

    def listed(self) -> list[dict[str, Any]]:
        response = self.http.get("/api/v1/memories")
        assert response.status_code == 200, response.text
        return response.json()["items"]

    def decisions(self) -> list[dict[str, Any]]:
        response = self.http.get("/api/v1/consent/decisions")
        assert response.status_code == 200, response.text
        return response.json()["items"]


@pytest.fixture(scope="module")
def admin(memory_server: ApiServer) -> httpx.Client:
    return memory_server.client(memory_server.admin_token)


@pytest.fixture(scope="module")
def alice(memory_server: ApiServer) -> User:
    return User(memory_server, "alice")


@pytest.fixture(scope="module")
def bob(memory_server: ApiServer) -> User:
    return User(memory_server, "bob")


def assert_error(response: httpx.Response, status: int, code: str | None = None) -> dict[str, Any]:
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) >= {"detail", "error"}, body
    if code is not None:
        assert body["error"] == code, body
    return body


# -- the pending queue -----------------------------------------------------------------------
def test_a_capture_waits_unsearchable_and_visible_only_to_its_owner(
    alice: User, bob: User, admin: httpx.Client
) -> None:
    pending_id = alice.pending_capture(
        "My workstation hostname is quokka-lab and I build with Bazel",
        project="/work/quokka",
        conversation_id="conv-pending",
        model="claude-test-1",
        captured_at="2026-01-02T03:04:05Z",
    )

    # Stored but not embedded: neither search nor the memories list sees it.
    assert all(hit["id"] != pending_id for hit in alice.search("which build tool does quokka-lab use?"))
    assert all(item["id"] != pending_id for item in alice.listed())

    listing = alice.pending()
    assert {"items", "total", "page", "size", "pages"} <= set(listing)
    (item,) = [i for i in listing["items"] if i["id"] == pending_id]
    assert "quokka-lab" in item["content"]
    assert item["app"] == "claude-code"
    assert item["project"] == "quokka"  # a capture's working directory, filed by its name
    assert item["conversation_id"] == "conv-pending"
    assert item["model"] == "claude-test-1"
    assert item["channel"] == "capture"
    assert item["captured_at"] == "2026-01-02T03:04:05Z"
    assert item["created_at"] and item["expires_at"] and item["redactions"] == 0
    assert alice.pending(app="claude-code", project="quokka")["total"] >= 1
    assert alice.pending(app="no-such-app")["total"] == 0

    # Bob neither sees nor decides it; to him it is an unknown id (404), not someone else's (403).
    assert pending_id not in bob.pending_ids()
    assert_error(bob.http.get("/api/v1/consent/pending", params={"user_id": alice.id}), 403)
    assert_error(bob.http.post(f"/api/v1/consent/{pending_id}/approve"), 404)
    assert_error(bob.http.post(f"/api/v1/consent/{pending_id}/reject"), 404)
    assert_error(
        bob.http.post("/api/v1/consent/rules", json={"effect": "allow", "from_item": pending_id}), 404
    )

    # The admin gets counts, never the text.
    assert_error(admin.get("/api/v1/consent/pending"), 403)
    assert_error(admin.get("/api/v1/consent/pending", params={"user_id": alice.id}), 403)
    count = admin.get("/api/v1/consent/pending/count", params={"user_id": alice.id})
    assert count.status_code == 200, count.text
    assert count.json()["total"] >= 1 and count.json()["by_app"]["claude-code"] >= 1
    assert "quokka" not in count.text
    everyone = admin.get("/api/v1/consent/pending/count").json()
    assert everyone["by_user"][alice.id] == count.json()["total"]
    assert alice.http.get("/api/v1/consent/pending/count").json()["total"] == count.json()["total"]
    assert_error(bob.http.get("/api/v1/consent/pending/count", params={"user_id": alice.id}), 403)


def test_redactions_the_proxy_made_add_to_the_servers_own(alice: User) -> None:
    """The proxy sends ``redactions`` (what it already masked): the queue shows the total, and a
    body without the field (an older proxy) still counts only the server's own."""
    proxied = alice.pending_capture(
        f"Deploy with [REDACTED:anthropic_api_key] and {FAKE_GITHUB_TOKEN}", redactions=2
    )
    older = alice.pending_capture(f"An older proxy sent {FAKE_GITHUB_TOKEN} unmasked")
    counts = {item["id"]: item["redactions"] for item in alice.pending(size=100)["items"]}
    assert counts[proxied] == 3
    assert counts[older] == 1
    assert alice.capture("never below zero", redactions=-1).status_code == 422


def test_the_admin_cannot_read_pending_text_through_the_memories_api(
    alice: User, admin: httpx.Client
) -> None:
    pending_id = alice.pending_capture("My locker combination at the gym is left 12 right 34")
    response = admin.get(f"/api/v1/memories/{pending_id}")
    assert response.status_code in (403, 404), response.text
    assert "locker" not in response.text


def test_pending_pages(bob: User) -> None:
    for n in range(3):
        bob.pending_capture(f"Paging note {n}: the cafeteria serves ramen on day {n}", app="pager")
    first = bob.pending(app="pager", size=2, page=1)
    second = bob.pending(app="pager", size=2, page=2)
    assert (first["total"], first["pages"], len(first["items"]), len(second["items"])) == (3, 2, 2, 1)
    assert not {i["id"] for i in first["items"]} & {i["id"] for i in second["items"]}
    assert_error(bob.http.get("/api/v1/consent/pending", params={"size": 1000}), 422)


# -- approve and reject ----------------------------------------------------------------------
def test_approve_makes_it_searchable_with_provenance(alice: User) -> None:
    pending_id = alice.pending_capture(
        "The release train for project heron leaves every second Tuesday",
        project="/work/heron",
        conversation_id="conv-heron",
        model="claude-test-2",
    )
    response = alice.http.post(f"/api/v1/consent/{pending_id}/approve")
    assert response.status_code == 200, response.text
    approved = response.json()
    assert approved["state"] == "active" and approved["consent"] == "approved"
    assert approved["id"] != pending_id and "heron" in approved["content"]
    new_id = approved["id"]

    detail = alice.http.get(f"/api/v1/memories/{new_id}")
    assert detail.status_code == 200, detail.text
    provenance = detail.json()["provenance"]
    assert {"channel", "project", "conversation_id", "model", "consent", "expires_at"} <= set(provenance)
    assert provenance["channel"] == "capture"
    assert provenance["project"] == "heron"  # the working directory's name
    assert provenance["conversation_id"] == "conv-heron"
    assert provenance["model"] == "claude-test-2"
    assert provenance["consent"] == "approved"

    hits = [hit for hit in alice.search("when does the heron release train leave?") if hit["id"] == new_id]
    assert hits and hits[0]["provenance"]["consent"] == "approved"
    assert hits[0]["provenance"]["channel"] == "capture"
    assert pending_id not in alice.pending_ids()

    # The pending id is gone; the new memory is not pending.
    assert_error(alice.http.post(f"/api/v1/consent/{pending_id}/approve"), 404, "not_found")
    assert_error(alice.http.post(f"/api/v1/consent/{new_id}/approve"), 409, "conflict")
    assert_error(alice.http.post(f"/api/v1/consent/{new_id}/reject"), 409, "conflict")
    assert_error(alice.http.post("/api/v1/consent/not-a-uuid/approve"), 422, "bad_input")
    assert_error(alice.http.post(f"/api/v1/consent/{uuid.uuid4()}/reject"), 404, "not_found")

    (decision,) = [d for d in alice.decisions() if d["memory_id"] == new_id]
    assert decision["decision"] == "approved"
    assert decision["decided_by"] == f"user:{alice.id}"
    assert decision["edited"] is False and decision["rule_id"] is None and decision["decided_at"]


def test_edit_then_approve_stores_the_edit_redacted(alice: User) -> None:
    pending_id = alice.pending_capture("I keep the sourdough starter in the second fridge at the office")
    edited = f"The sourdough starter lives in fridge two; the bot token is {FAKE_GITHUB_TOKEN}"
    response = alice.http.post(f"/api/v1/consent/{pending_id}/approve", json={"text": edited})
    assert response.status_code == 200, response.text
    approved = response.json()
    assert approved["consent"] == "approved_edited"
    assert FAKE_GITHUB_TOKEN not in approved["content"]
    assert "[REDACTED:" in approved["content"] and "fridge two" in approved["content"]

    detail = alice.http.get(f"/api/v1/memories/{approved['id']}").json()
    assert detail["text"] == approved["content"]
    assert detail["provenance"]["consent"] == "approved_edited"
    assert detail["provenance"]["redactions"] >= 1
    hits = alice.search("where is the sourdough starter?")
    assert approved["id"] in [h["id"] for h in hits]
    assert all(FAKE_GITHUB_TOKEN not in h["content"] for h in hits)
    assert all("second fridge at the office" not in h["content"] for h in hits)
    (decision,) = [d for d in alice.decisions() if d["memory_id"] == approved["id"]]
    assert decision["edited"] is True

    other = alice.pending_capture("A capture to approve with blank text")
    assert_error(alice.http.post(f"/api/v1/consent/{other}/approve", json={"text": "   "}), 422)
    assert other in alice.pending_ids()  # a refused edit leaves the item waiting


def test_reject_deletes_it_and_records_who(alice: User, admin: httpx.Client) -> None:
    pending_id = alice.pending_capture("My dentist appointment is on the ninth at 3pm in Leith")
    response = alice.http.post(f"/api/v1/consent/{pending_id}/reject")
    assert response.status_code == 200, response.text
    assert response.json() == {"id": pending_id, "status": "rejected"}
    assert pending_id not in alice.pending_ids()
    assert all("dentist" not in hit["content"] for hit in alice.search("when is my dentist appointment?"))
    assert_error(alice.http.post(f"/api/v1/consent/{pending_id}/approve"), 404)
    (decision,) = [d for d in alice.decisions() if d["memory_id"] == pending_id]
    assert (decision["decision"], decision["decided_by"]) == ("rejected", f"user:{alice.id}")

    # The admin may clear an item without reading it; the log says so.
    by_admin = alice.pending_capture("A capture the administrator will reject unseen")
    assert admin.post(f"/api/v1/consent/{by_admin}/reject").status_code == 200
    log = admin.get("/api/v1/consent/decisions", params={"user_id": alice.id})
    assert log.status_code == 200, log.text
    (decision,) = [d for d in log.json()["items"] if d["memory_id"] == by_admin]
    assert decision["decided_by"] == "admin"


# -- standing rules --------------------------------------------------------------------------
def test_allow_and_deny_rules_decide_future_captures(alice: User, bob: User) -> None:
    allow = alice.http.post(
        "/api/v1/consent/rules",
        json={"app_pattern": "cursor", "project_pattern": "/work/open/*", "effect": "allow"},
    )
    assert allow.status_code == 201, allow.text
    rule = allow.json()
    assert (
        rule["created"] is True and rule["created_by"] == f"user:{alice.id}" and rule["user_id"] == alice.id
    )
    same = alice.http.post(
        "/api/v1/consent/rules",
        json={"app_pattern": "cursor", "project_pattern": "/work/open/*", "effect": "allow"},
    )
    assert same.status_code == 200 and same.json()["id"] == rule["id"] and same.json()["created"] is False

    stored = alice.capture(
        "The open project uses tabs, never spaces", app="cursor", project="/work/open/tabs"
    )
    assert stored.status_code == 200, stored.text
    assert stored.json()["status"] == "stored"
    memory_id = stored.json()["id"]
    provenance = alice.http.get(f"/api/v1/memories/{memory_id}").json()["provenance"]
    assert provenance["consent"] == "rule"
    (decision,) = [d for d in alice.decisions() if d["memory_id"] == memory_id]
    assert decision["rule_id"] == rule["id"] and decision["decided_by"] == f"rule:{rule['id']}"
    assert memory_id in [h["id"] for h in alice.search("tabs or spaces in the open project?")]

    # Outside the rule's patterns: still pending.
    elsewhere = alice.capture("The closed project uses spaces", app="cursor", project="/work/closed")
    assert elsewhere.json()["status"] == "pending"

    deny = alice.http.post(
        "/api/v1/consent/rules", json={"project_pattern": "/work/open/payroll*", "effect": "deny"}
    )
    assert deny.status_code == 201, deny.text
    before = (alice.pending()["total"], len(alice.listed()))
    refused = alice.capture(
        "Salary bands for 2026 are in the payroll sheet", app="cursor", project="/work/open/payroll"
    )
    assert_error(refused, 403, "consent_denied")  # deny rules win over the allow rule above
    assert (alice.pending()["total"], len(alice.listed())) == before
    assert all("Salary" not in h["content"] for h in alice.search("salary bands payroll"))

    rules = alice.http.get("/api/v1/consent/rules").json()["rules"]
    assert [r["effect"] for r in rules] == ["deny", "allow"]  # the order they are checked
    assert alice.id not in json.dumps(bob.http.get("/api/v1/consent/rules").json())

    assert_error(bob.http.delete(f"/api/v1/consent/rules/{deny.json()['id']}"), 404)
    assert_error(alice.http.delete(f"/api/v1/consent/rules/{uuid.uuid4()}"), 404)
    assert_error(alice.http.delete("/api/v1/consent/rules/42"), 422)
    assert_error(alice.http.post("/api/v1/consent/rules", json={"effect": "maybe"}), 422)
    assert_error(alice.http.post("/api/v1/consent/rules", json={"effect": "allow", "app_pattern": ""}), 422)
    assert_error(alice.http.post("/api/v1/consent/rules", json={"effect": "allow", "user_id": bob.id}), 403)
    removed = alice.http.delete(f"/api/v1/consent/rules/{deny.json()['id']}")
    assert removed.status_code == 200 and removed.json()["status"] == "deleted"
    again = alice.capture("Salary bands are reviewed each March", app="cursor", project="/work/open/payroll")
    assert again.json()["status"] == "stored"  # only the allow rule is left


def test_a_rule_from_an_item_matches_its_app_and_project_literally(bob: User) -> None:
    project = "/work/odd[1]*name"  # filed under its name, "odd[1]*name"
    item = bob.pending_capture("The odd project pins Node 20", app="windsurf", project=project)
    response = bob.http.post("/api/v1/consent/rules", json={"effect": "allow", "from_item": item})
    assert response.status_code == 201, response.text
    rule = response.json()
    assert rule["app_pattern"] == "windsurf"
    assert rule["project_pattern"] == "odd[[]1][*]name"
    assert item in bob.pending_ids()  # a rule decides future captures, not this one

    same_place = bob.capture("The odd project lints with Biome", app="windsurf", project=project)
    assert same_place.json()["status"] == "stored"
    lookalike = bob.capture(
        "A lookalike project uses ESLint", app="windsurf", project="/work/odd1-anything-name"
    )
    assert lookalike.json()["status"] == "pending"  # the glob characters were taken literally
    assert_error(bob.http.post("/api/v1/consent/rules", json={"effect": "deny", "from_item": "x"}), 422)
    assert_error(
        bob.http.post("/api/v1/consent/rules", json={"effect": "deny", "from_item": str(uuid.uuid4())}), 404
    )


# -- bulk --------------------------------------------------------------------------------
def test_bulk_approve_and_reject_report_each_id(alice: User, bob: User) -> None:
    first = alice.pending_capture("Bulk one: the staging cluster is called ember")
    second = alice.pending_capture("Bulk two: the prod cluster is called cinder")
    bobs = bob.pending_capture("Bob's item the bulk call must not touch")
    unknown = str(uuid.uuid4())
    response = alice.http.post(
        "/api/v1/consent/approve", json={"ids": [first, "not-a-uuid", bobs, unknown, second]}
    )
    assert response.status_code == 200, response.text
    body = response.json()
    assert (body["succeeded"], body["failed"]) == (2, 3)
    results = {r["id"]: r for r in body["results"]}
    assert [r["id"] for r in body["results"]] == [first, "not-a-uuid", bobs, unknown, second]
    assert results[first]["ok"] and results[first]["status"] == "approved" and results[first]["new_id"]
    assert results[second]["ok"] and results[second]["consent"] == "approved"
    assert (results["not-a-uuid"]["http_status"], results["not-a-uuid"]["error"]) == (422, "bad_input")
    assert (results[bobs]["http_status"], results[unknown]["http_status"]) == (404, 404)
    assert bobs in bob.pending_ids()
    found = {h["id"] for h in alice.search("what are the clusters called?")}
    assert {results[first]["new_id"], results[second]["new_id"]} <= found

    third = alice.pending_capture("Bulk three: a note to throw away")
    rejected = alice.http.post("/api/v1/consent/reject", json={"ids": [third, third]}).json()
    assert [r["ok"] for r in rejected["results"]] == [True, False]
    assert rejected["results"][0]["status"] == "rejected" and rejected["results"][1]["http_status"] == 404
    assert_error(alice.http.post("/api/v1/consent/approve", json={"ids": []}), 422)
    assert_error(alice.http.post("/api/v1/consent/approve", json={"ids": "nope"}), 422)


# -- the CLI ---------------------------------------------------------------------------------
def test_cli_list_approve_reject_and_rules(shared_server: MemoryServer) -> None:
    memory_server = shared_server  # the CLI talks to a server over the network
    carol = User(memory_server, "carol")
    keep = carol.pending_capture("Carol deploys the billing service with Helm", project="/work/ledger")
    drop = carol.pending_capture("Carol's throwaway capture about lunch", project="/work/ledger")

    def ccmem(*args: str, check: bool = True) -> Any:
        return memory_server.ccmem(
            "consent", *args, "--url", memory_server.base_url, "--token", carol.token, check=check
        )

    listing = json.loads(ccmem("list", "--json").stdout)
    assert {item["id"] for item in listing["items"]} == {keep, drop}
    table = ccmem("list").stdout
    assert keep in table and drop in table and "ledger" in table  # whole ids, to copy; the project

    approved = json.loads(
        ccmem("approve", keep, "--text", "Carol deploys billing with Helm 3", "--json").stdout
    )
    assert (
        approved["consent"] == "approved_edited"
        and approved["content"] == "Carol deploys billing with Helm 3"
    )
    assert "rejected" in ccmem("reject", drop).stdout
    assert carol.pending_ids() == []
    assert approved["id"] in [h["id"] for h in carol.search("how is billing deployed?")]

    failed = ccmem("approve", drop, check=False)
    assert failed.returncode == 1
    assert failed.stderr.strip().count("\n") == 0 and "not found" in failed.stderr
    bad = ccmem("rules", "add", "--effect", "sometimes", check=False)
    assert bad.returncode == 1 and "allow or deny" in bad.stderr

    added = json.loads(
        ccmem("rules", "add", "--app", "cursor", "--project", "/work/*", "--effect", "allow", "--json").stdout
    )
    assert added["created"] and added["effect"] == "allow"
    rules = json.loads(ccmem("rules", "list", "--json").stdout)["rules"]
    assert [r["id"] for r in rules] == [added["id"]]
    assert added["id"] in ccmem("rules").stdout
    stored = carol.capture("Carol's cursor capture", app="cursor", project="/work/anything")
    assert stored.json()["status"] == "stored"
    decisions = json.loads(ccmem("decisions", "--json").stdout)["items"]
    assert {d["decision"] for d in decisions} == {"approved", "rejected", "allowed"}
    assert "removed" in ccmem("rules", "remove", added["id"]).stdout
    assert json.loads(ccmem("rules", "list", "--json").stdout)["rules"] == []

    # Bulk through the CLI: one good id and one unknown id → exit 1, the good one still decided.
    bulk_item = carol.pending_capture("Carol's bulk capture about the office plants")
    bulk = ccmem("reject", bulk_item, str(uuid.uuid4()), check=False)
    assert bulk.returncode == 1 and "1 of 2" in bulk.stderr
    assert carol.pending_ids() == []
