"""Teams (docs/teams.md): roles, invitations, explicit shares redacted again, merged search with
team labels, the audit log, quotas, and isolation (a reader cannot write, a non-member reads
nothing, a removed member loses access at once, a capture never reaches a team). Against the
app in process on SQLite, and one flow against the real server on real PostgreSQL."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from claude_code_memory.memories.teams.search import merge
from claude_code_memory.search.shaping import Hit
from tests.support.servers import ApiServer, StartServer
from tests.support.users import unique

DEPLOY_FACT = (
    "The checkout service deploys with the zebrafinch pipeline; page ops.lead@zebracorp.net when it fails"
)


class Member:
    def __init__(self, server: ApiServer, name: str) -> None:
        self.id = unique(name)
        self.token = server.make_token(self.id)
        self.http = server.client(self.token, timeout=60)

    def call(self, method: str, path: str, status: int = 200, **kwargs: Any) -> Any:
        response = self.http.request(method, path, **kwargs)
        assert response.status_code == status, f"{method} {path}: {response.status_code} {response.text}"
        return response.json() if response.content else None

    def remember(self, text: str, project: str | None = None) -> str:
        body = {"text": text, "app": "tests"} | ({"project": project} if project else {})
        answer = self.call("POST", "/api/v1/memories/", json=body)
        return str(answer["id"])

    def search(self, query: str, **fields: Any) -> list[dict[str, Any]]:
        return self.call("POST", "/api/v1/memories/search", json={"query": query} | fields)["results"]


def team_flow(server: ApiServer) -> dict[str, Any]:
    """Create, invite, accept, share, search, remove: the checks every database must pass."""
    alice, bob, carol, dave = (Member(server, name) for name in ("alice", "bob", "carol", "dave"))
    team = unique("shop", 6).lower()
    assert alice.call("POST", "/api/v1/teams", 201, json={"name": team}) == {"name": team, "role": "owner"}
    alice.call("POST", "/api/v1/teams", 409, json={"name": team})

    bob_invite = alice.call("POST", f"/api/v1/teams/{team}/invitations", 201, json={"user_id": bob.id})
    carol_invite = alice.call(
        "POST", f"/api/v1/teams/{team}/invitations", 201, json={"user_id": carol.id, "role": "reader"}
    )
    # Only the invited user accepts; a member cannot invite.
    dave.call("POST", "/api/v1/teams/invitations/accept", 404, json={"code": bob_invite["code"]})
    assert (
        bob.call("POST", "/api/v1/teams/invitations/accept", json={"code": bob_invite["code"]})["role"]
        == "member"
    )
    bob.call("POST", "/api/v1/teams/invitations/accept", 404, json={"code": bob_invite["code"]})  # used
    carol.call("POST", "/api/v1/teams/invitations/accept", json={"code": carol_invite["code"]})
    bob.call("POST", f"/api/v1/teams/{team}/invitations", 403, json={"user_id": dave.id})
    members = alice.call("GET", f"/api/v1/teams/{team}/members")["members"]
    assert {(m["user_id"], m["role"]) for m in members} == {
        (alice.id, "owner"),
        (bob.id, "member"),
        (carol.id, "reader"),
    }

    # The personal memory keeps the e-mail address (privacy.mask_pii is off); the team's copy
    # is redacted again on the way in.
    personal = alice.remember(DEPLOY_FACT, "checkout")
    shared = alice.call("POST", f"/api/v1/teams/{team}/share", json={"memory_ids": [personal]})["results"]
    assert len(shared) == 1 and shared[0]["event"] == "ADD" and shared[0]["source_id"] == personal
    assert "ops.lead@zebracorp.net" not in shared[0]["memory"] and "zebrafinch" in shared[0]["memory"]
    assert "ops.lead@zebracorp.net" in alice.call("GET", f"/api/v1/memories/{personal}")["text"]

    # A reader cannot share; a non-member reads nothing and cannot share.
    carol_own = carol.remember("Carol thinks the zebrafinch pipeline is slow on Mondays")
    carol.call("POST", f"/api/v1/teams/{team}/share", 403, json={"memory_ids": [carol_own]})
    dave_own = dave.remember("Dave's zebrafinch pipeline notes: deploy at noon")
    dave.call("POST", f"/api/v1/teams/{team}/share", 404, json={"memory_ids": [dave_own]})
    dave.call("GET", f"/api/v1/teams/{team}/memories", 404)
    assert all("team" not in hit for hit in dave.search("how does checkout deploy with zebrafinch"))
    # A member shares only their own memories.
    bob.call("POST", f"/api/v1/teams/{team}/share", 404, json={"memory_ids": [dave_own]})

    # Bob's search: his own memory first, then the team's, labelled.
    bob_own = bob.remember("Bob deploys the checkout service by hand when zebrafinch is down")
    results = bob.search("how does the checkout service deploy with zebrafinch", limit=5)
    ids = [hit["id"] for hit in results]
    assert bob_own in ids and shared[0]["id"] in ids, results
    assert ids.index(bob_own) < ids.index(shared[0]["id"])
    team_hit = results[ids.index(shared[0]["id"])]
    assert team_hit["team"] == team and "ops.lead@zebracorp.net" not in team_hit["content"]
    assert "team" not in results[ids.index(bob_own)]
    assert personal not in ids and carol_own not in ids  # never another user's personal memory
    only_team = bob.search("zebrafinch deploy", scope="team")
    assert [hit["id"] for hit in only_team] == [shared[0]["id"]]

    # The audit log: who shared and who read; owners only.
    entries = alice.call("GET", f"/api/v1/teams/{team}/audit")["entries"]
    assert any(
        e["action"] == "share" and e["actor"] == alice.id and e["memory_id"] == shared[0]["id"]
        for e in entries
    )
    assert any(
        e["action"] == "read" and e["actor"] == bob.id and e["memory_id"] == shared[0]["id"] for e in entries
    )
    bob.call("GET", f"/api/v1/teams/{team}/audit", 403)

    # Roles change by an owner only; the last owner cannot step down.
    bob.call("PUT", f"/api/v1/teams/{team}/members/{carol.id}", 403, json={"role": "member"})
    alice.call("PUT", f"/api/v1/teams/{team}/members/{alice.id}", 409, json={"role": "member"})
    assert (
        alice.call("PUT", f"/api/v1/teams/{team}/members/{carol.id}", json={"role": "member"})["role"]
        == "member"
    )
    alice.call("PUT", f"/api/v1/teams/{team}/members/{carol.id}", json={"role": "reader"})
    carol.call("POST", f"/api/v1/teams/{team}/share", 403, json={"memory_ids": [carol_own]})

    # Removed: Bob's same token reads nothing of the team from the next request on.
    alice.call("DELETE", f"/api/v1/teams/{team}/members/{bob.id}", 204)
    bob.call("GET", f"/api/v1/teams/{team}/memories", 404)
    after = bob.search("how does the checkout service deploy with zebrafinch", limit=5)
    assert shared[0]["id"] not in [hit["id"] for hit in after] and bob_own in [hit["id"] for hit in after]
    assert alice.call("GET", "/api/v1/teams")["teams"] == [{"name": team, "role": "owner"}]
    # The last owner cannot leave.
    alice.call("DELETE", f"/api/v1/teams/{team}/members/{alice.id}", 409)
    return {"team": team, "alice": alice, "bob": bob, "carol": carol, "shared": shared[0]["id"]}


def team_deletion(server: ApiServer, state: dict[str, Any]) -> None:
    """Deleting a team: owners only; its memories go for good and from every member's search at
    once; its name is free again, and a new team of that name holds none of the old."""
    alice, carol, team, shared = state["alice"], state["carol"], state["team"], state["shared"]
    assert [hit["id"] for hit in carol.search("zebrafinch deploy", scope="team")] == [shared]
    carol.call("DELETE", f"/api/v1/teams/{team}", 403)  # a reader
    Member(server, "erin").call("DELETE", f"/api/v1/teams/{team}", 404)  # not a member
    assert alice.call("DELETE", f"/api/v1/teams/{team}") == {"team": team, "memories_deleted": 1}
    alice.call("DELETE", f"/api/v1/teams/{team}", 404)
    assert alice.call("GET", "/api/v1/teams")["teams"] == []
    carol.call("GET", f"/api/v1/teams/{team}/memories", 404)
    assert shared not in [hit["id"] for hit in carol.search("zebrafinch deploy", limit=10)]
    assert carol.search("zebrafinch deploy", scope="team") == []
    alice.call("POST", "/api/v1/teams", 201, json={"name": team})
    assert alice.call("GET", f"/api/v1/teams/{team}/memories")["items"] == []
    assert [m["user_id"] for m in alice.call("GET", f"/api/v1/teams/{team}/members")["members"]] == [alice.id]
    entries = alice.call("GET", f"/api/v1/teams/{team}/audit")["entries"]
    assert [entry["action"] for entry in entries] == ["create"]  # the old team's log went with it


# -- in process, SQLite ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def server(start_module_server: StartServer) -> ApiServer:
    return start_module_server(in_process=True, env={"CCMEM_TEAMS__MAX_MEMORIES": "3"})


def test_team_roles_sharing_search_audit_removal_and_deletion(server: ApiServer) -> None:
    state = team_flow(server)
    team_deletion(server, state)
    # The shared copy's text left the database (a content-less tombstone of the team's user).
    with sqlite3.connect(server.data_dir / "memory.db") as db:  # type: ignore[attr-defined]
        row = db.execute(
            "SELECT content, state FROM memories WHERE id = ?", (uuid.UUID(state["shared"]).hex,)
        ).fetchone()
    assert row == ("", "deleted")


def test_quota_pending_items_and_captures_never_reach_a_team(server: ApiServer, tmp_path: Path) -> None:
    state = team_flow(server)
    alice, carol, team = state["alice"], state["carol"], state["team"]
    # A capture (the proxy's route) waits for consent: sharing it is refused, consent stays personal.
    captured = alice.call(
        "POST",
        "/api/v1/capture",
        json={
            "messages": [
                {"role": "user", "content": "Where do zebrafinch secrets for checkout live?"},
                {"role": "assistant", "content": "In the vault under checkout/zebrafinch, rotated weekly."},
            ],
            "project": "checkout",
        },
    )
    assert captured["status"] == "pending", captured
    alice.call("POST", f"/api/v1/teams/{team}/share", 409, json={"memory_ids": [captured["id"]]})
    # The hooks' Stop capture of a session: also personal.
    repo = tmp_path / "checkout"
    (repo / ".git").mkdir(parents=True)
    session = str(uuid.uuid4())
    hook = {"session_id": session, "cwd": str(repo), "transcript_path": "/dev/null"}
    alice.call(
        "POST",
        "/api/v1/hooks/claude-code",
        json=hook
        | {"hook_event_name": "UserPromptSubmit", "prompt": "Is the zebrafinch staging slot free today?"},
    )
    alice.call(
        "POST",
        "/api/v1/hooks/claude-code",
        json=hook
        | {
            "hook_event_name": "Stop",
            "last_assistant_message": "Yes, staging is free.",
            "stop_hook_active": False,
        },
    )
    held = alice.call("GET", f"/api/v1/teams/{team}/memories")
    assert [item["id"] for item in held["items"]] == [state["shared"]] and held["total"] == 1

    # The quota (3 here): two more fit, the third is refused with a clear message.
    more = [
        alice.remember(f"Team convention {n}: review zebrafinch changes in pairs {uuid.uuid4()}")
        for n in range(3)
    ]
    alice.call("POST", f"/api/v1/teams/{team}/share", json={"memory_ids": more[:2]})
    refused = alice.http.post(f"/api/v1/teams/{team}/share", json={"memory_ids": more[2:]})
    assert refused.status_code == 413 and "teams.max_memories" in refused.text, refused.text
    assert alice.call("GET", f"/api/v1/teams/{team}/memories")["total"] == 3
    # Carol (a reader) is still in and reads them; her hooks' recall labels them by team.
    carol_repo = tmp_path / "carol" / "checkout"  # the team memory's project (scopes apply as ever)
    (carol_repo / ".git").mkdir(parents=True)
    answer = carol.call(
        "POST",
        "/api/v1/hooks/claude-code",
        json={
            "session_id": str(uuid.uuid4()),
            "cwd": str(carol_repo),
            "transcript_path": "/dev/null",
            "hook_event_name": "UserPromptSubmit",
            "prompt": "Which pipeline deploys the checkout service, and who is paged when it fails?",
        },
    )
    block = answer["hookSpecificOutput"]["additionalContext"]
    assert f"team {team}]" in block and "zebrafinch pipeline" in block
    # The SessionStart briefing of a new session in the project: the team's memories, labelled.
    briefing = carol.call(
        "POST",
        "/api/v1/hooks/claude-code",
        json={
            "session_id": str(uuid.uuid4()),
            "cwd": str(carol_repo),
            "transcript_path": "/dev/null",
            "hook_event_name": "SessionStart",
            "source": "startup",
        },
    )["hookSpecificOutput"]["additionalContext"]
    assert f"team {team}]" in briefing and "zebrafinch pipeline" in briefing, briefing
    assert "ops.lead@zebracorp.net" not in briefing
    assert "ops.lead@zebracorp.net" not in block


def test_concurrent_shares_never_pass_the_quota(server: ApiServer) -> None:
    concurrent_shares(server)


def concurrent_shares(server: ApiServer) -> None:
    """Six shares at once into a team with room for three (``teams.max_memories`` 3): three
    stored, three refused with 413; the count and the writes are one step, whatever the timing."""
    owner = Member(server, "quota-owner")
    team = unique("quota", 6).lower()
    owner.call("POST", "/api/v1/teams", 201, json={"name": team})
    facts = [owner.remember(f"Quota fact {n}: the kiwi{n} service owns port {9000 + n}") for n in range(6)]

    def share(memory_id: str) -> int:
        with server.client(owner.token, timeout=120) as http:
            return http.post(f"/api/v1/teams/{team}/share", json={"memory_ids": [memory_id]}).status_code

    with ThreadPoolExecutor(len(facts)) as pool:
        statuses = sorted(pool.map(share, facts))
    assert statuses == [200, 200, 200, 413, 413, 413], statuses
    assert owner.call("GET", f"/api/v1/teams/{team}/memories")["total"] == 3


def test_no_token_and_no_request_acts_for_a_teams_own_user(server: ApiServer) -> None:
    owner_name = "team." + uuid.uuid4().hex  # the form of a team's own user
    refused = server.client(server.admin_token).post("/api/v1/tokens", json={"user_id": owner_name})  # type: ignore[attr-defined]
    assert refused.status_code == 403 and "/api/v1/teams" in refused.text, refused.text
    admin = server.client(server.admin_token).post(  # type: ignore[attr-defined]
        "/api/v1/memories/search", json={"query": "anything", "user_id": owner_name}
    )
    assert admin.status_code == 403, admin.text
    alice = Member(server, "alice")
    alice.call("POST", "/api/v1/memories/search", 403, json={"query": "anything", "user_id": owner_name})


def accept(member: Member, code: str, status: int = 200) -> Any:
    return member.call("POST", "/api/v1/teams/invitations/accept", status, json={"code": code})


def test_invitations_are_listed_revoked_and_one_per_user(server: ApiServer) -> None:
    alice, bob, carol, dave = (Member(server, name) for name in ("alice", "bob", "carol", "dave"))
    team = unique("inv", 6).lower()
    alice.call("POST", "/api/v1/teams", 201, json={"name": team})
    invitations = f"/api/v1/teams/{team}/invitations"
    bob_code = alice.call("POST", invitations, 201, json={"user_id": bob.id})["code"]
    carol_code = alice.call("POST", invitations, 201, json={"user_id": carol.id, "role": "reader"})["code"]
    listed = alice.call("GET", invitations)["invitations"]
    assert [(i["invitee"], i["role"], i["invited_by"]) for i in listed] == [
        (bob.id, "member", alice.id),
        (carol.id, "reader", alice.id),
    ]
    assert all(i["id"] and i["expires_at"] for i in listed) and "code" not in str(listed)

    # Revoked by id, or by the invited user's id: the code stops working at once.
    bob_id = next(i["id"] for i in listed if i["invitee"] == bob.id)
    assert alice.call("DELETE", f"{invitations}/{bob_id}")["invitee"] == bob.id
    accept(bob, bob_code, 404)
    alice.call("DELETE", f"{invitations}/{carol.id}")
    accept(carol, carol_code, 404)
    alice.call("DELETE", f"{invitations}/{carol.id}", 404)  # nothing open is left
    assert alice.call("GET", invitations)["invitations"] == []

    # A second code to a user who holds one replaces it: the first never works, as member or owner.
    first = alice.call("POST", invitations, 201, json={"user_id": dave.id})["code"]
    second = alice.call("POST", invitations, 201, json={"user_id": dave.id, "role": "owner"})["code"]
    assert [i["role"] for i in alice.call("GET", invitations)["invitations"]] == ["owner"]
    accept(dave, first, 404)
    assert accept(dave, second)["role"] == "owner"
    # Removed, no code of his works again: neither the first nor the used second.
    alice.call("DELETE", f"/api/v1/teams/{team}/members/{dave.id}", 204)
    accept(dave, first, 404)
    accept(dave, second, 404)
    assert dave.id not in [
        m["user_id"] for m in alice.call("GET", f"/api/v1/teams/{team}/members")["members"]
    ]

    # Only owners list and revoke.
    accept(bob, alice.call("POST", invitations, 201, json={"user_id": bob.id})["code"])
    bob.call("GET", invitations, 403)
    alice.call("POST", invitations, 201, json={"user_id": carol.id})
    bob.call("DELETE", f"{invitations}/{carol.id}", 403)
    audit = alice.call("GET", f"/api/v1/teams/{team}/audit")["entries"]
    assert sum(e["action"] == "revoke" for e in audit) == 2


def test_an_owners_open_codes_die_with_their_role(server: ApiServer) -> None:
    alice, carol, dave, erin, fay = (
        Member(server, name) for name in ("alice", "carol", "dave", "erin", "fay")
    )
    team = unique("own", 6).lower()
    alice.call("POST", "/api/v1/teams", 201, json={"name": team})
    invitations = f"/api/v1/teams/{team}/invitations"
    accept(carol, alice.call("POST", invitations, 201, json={"user_id": carol.id, "role": "owner"})["code"])
    dave_code = carol.call("POST", invitations, 201, json={"user_id": dave.id, "role": "owner"})["code"]
    erin_code = carol.call("POST", invitations, 201, json={"user_id": erin.id})["code"]
    fay_code = alice.call("POST", invitations, 201, json={"user_id": fay.id})["code"]

    # Carol demoted: her codes stop working (a code never grants more than its issuer holds).
    alice.call("PUT", f"/api/v1/teams/{team}/members/{carol.id}", json={"role": "member"})
    accept(dave, dave_code, 404)
    # Promoted again and her new code works until she is removed.
    alice.call("PUT", f"/api/v1/teams/{team}/members/{carol.id}", json={"role": "owner"})
    accept(erin, erin_code, 404)  # the code from before the demotion stays dead
    erin_code = carol.call("POST", invitations, 201, json={"user_id": erin.id})["code"]
    alice.call("DELETE", f"/api/v1/teams/{team}/members/{carol.id}", 204)
    accept(erin, erin_code, 404)
    assert [i["invitee"] for i in alice.call("GET", invitations)["invitations"]] == [fay.id]
    # Alice's own code is untouched by Carol's fall.
    assert accept(fay, fay_code)["role"] == "member"
    members = {m["user_id"] for m in alice.call("GET", f"/api/v1/teams/{team}/members")["members"]}
    assert members == {alice.id, fay.id}


def test_a_code_whose_issuer_is_no_owner_at_redemption_is_refused(server: ApiServer) -> None:
    """The check at redemption, whatever else cleaned up: an open row of an issuer who is no
    longer an owner (left in the table as a crash or a race between two requests could leave it)."""
    alice, carol, dave = (Member(server, name) for name in ("alice", "carol", "dave"))
    team = unique("red", 6).lower()
    alice.call("POST", "/api/v1/teams", 201, json={"name": team})
    invitations = f"/api/v1/teams/{team}/invitations"
    accept(carol, alice.call("POST", invitations, 201, json={"user_id": carol.id})["code"])
    code = alice.call("POST", invitations, 201, json={"user_id": dave.id, "role": "owner"})["code"]
    with sqlite3.connect(server.data_dir / "memory.db") as db:  # type: ignore[attr-defined]
        # Carol (a member) stands as the issuer of Dave's open code.
        changed = db.execute(
            "UPDATE team_invitations SET invited_by = ? WHERE invitee = ? AND accepted_at IS NULL",
            (carol.id, dave.id),
        ).rowcount
    assert changed == 1
    accept(dave, code, 404)


def _team_user(server: ApiServer, team: str) -> str:
    with sqlite3.connect(server.data_dir / "memory.db") as db:  # type: ignore[attr-defined]
        row = db.execute(
            "SELECT users.user_id FROM teams JOIN users ON users.id = teams.owner_user_id "
            "WHERE teams.name = ?",
            (team,),
        ).fetchone()
    assert row is not None
    return str(row[0])


def test_the_admin_token_cannot_act_as_a_teams_user_over_mcp(server: ApiServer) -> None:
    """docs/teams.md: nobody, the admin included, acts for a team's own user; MCP as REST."""
    alice = Member(server, "alice")
    team = unique("ops", 6).lower()
    alice.call("POST", "/api/v1/teams", 201, json={"name": team})
    secret = alice.remember("The ops rota lives in the heron spreadsheet")
    alice.call("POST", f"/api/v1/teams/{team}/share", json={"memory_ids": [secret]})
    owner_name = _team_user(server, team)
    admin = server.client(server.admin_token)  # type: ignore[attr-defined]
    headers = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-06-18"}
    for tool, arguments in (("list_memories", {}), ("add_memories", {"text": "planted by the admin"})):
        message = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": tool, "arguments": arguments},
        }
        answer = admin.post(f"/mcp/openmemory/http/{owner_name}", json=message, headers=headers)
        assert answer.status_code == 403, (tool, answer.status_code, answer.text)
        assert "heron" not in answer.text
    # The SSE transport refuses before a stream opens.
    assert admin.get(f"/mcp/openmemory/sse/{owner_name}").status_code == 403
    items = alice.call("GET", f"/api/v1/teams/{team}/memories")["items"]
    assert [item["id"] for item in items] != [] and all("planted" not in item["content"] for item in items)


# -- real server, real PostgreSQL --------------------------------------------------------------


def test_teams_on_postgresql(start_server: StartServer, postgres_url: str) -> None:
    server = start_server(env={"DATABASE_URL": postgres_url, "CCMEM_TEAMS__MAX_MEMORIES": "3"})
    state = team_flow(server)
    concurrent_shares(server)  # the quota's lock is an advisory lock there
    # The team scope through MCP (a real socket here), in OpenMemory's tool set and Claude Code's:
    # Bob was removed, so Carol (a reader) asks.
    carol, team = state["carol"], state["team"]
    for tools in ("openmemory", "claude-code"):
        found = asyncio.run(
            mcp_search(server, carol.id, carol.token, "zebrafinch deploy", tools, scope="team")
        )
        items = found["results"] if isinstance(found, dict) else found
        assert [(hit["id"], hit["team"]) for hit in items] == [(state["shared"], team)], (tools, found)
    team_deletion(server, state)


# -- the CLI, against the real server ------------------------------------------------------------


def test_cli_team_commands(start_server: StartServer) -> None:
    server = start_server()
    owner, reader = Member(server, "olga"), Member(server, "rita")
    owner_token, reader_token = server.make_token(owner.id), server.make_token(reader.id)
    team = unique("docs", 6).lower()

    def ccmem(token: str, *args: str, check: bool = True) -> Any:
        return server.ccmem("team", *args, "--url", server.base_url, "--token", token, check=check)  # type: ignore[attr-defined]

    assert "created team" in ccmem(owner_token, "create", team).stdout
    code = json.loads(ccmem(owner_token, "invite", team, reader.id, "--role", "reader", "--json").stdout)[
        "code"
    ]
    assert "as reader" in ccmem(reader_token, "accept", code).stdout
    # An open invitation listed, then revoked by its user's id: its code no longer works.
    late = Member(server, "lena")
    late_code = json.loads(ccmem(owner_token, "invite", team, late.id, "--json").stdout)["code"]
    listed_invites = json.loads(ccmem(owner_token, "invitations", team, "--json").stdout)["invitations"]
    assert [(i["invitee"], i["role"]) for i in listed_invites] == [(late.id, "member")]
    assert f"revoked the invitation of {late.id}" in ccmem(owner_token, "uninvite", team, late.id).stdout
    assert ccmem(late.token, "accept", late_code, check=False).returncode == 1
    memory = owner.remember("The docs site builds with the kestrel generator on every merge")
    shared = json.loads(ccmem(owner_token, "share", team, memory, "--json").stdout)["results"]
    listed = json.loads(ccmem(reader_token, "memories", team, "--json").stdout)
    assert [item["id"] for item in listed["items"]] == [shared[0]["id"]]
    refused = ccmem(reader_token, "share", team, memory, check=False)
    assert refused.returncode == 1 and "reader cannot share" in refused.stderr
    assert ccmem(reader_token, "audit", team, check=False).returncode == 1
    audit = json.loads(ccmem(owner_token, "audit", team, "--json").stdout)["entries"]
    assert {(e["actor"], e["action"]) for e in audit} >= {(owner.id, "share"), (reader.id, "read")}
    # MCP search_memory (the official SDK over Streamable HTTP): the team's memory, labelled.
    found = asyncio.run(mcp_search(server, reader.id, reader_token, "how is the docs site built"))
    items = found["results"] if isinstance(found, dict) else found
    labelled = [item for item in items if item["id"] == shared[0]["id"]]
    assert labelled and labelled[0]["team"] == team, found
    assert "left" in ccmem(reader_token, "leave", team).stdout
    assert ccmem(reader_token, "memories", team, check=False).returncode == 1
    members = json.loads(ccmem(owner_token, "members", team, "--json").stdout)["members"]
    assert [m["user_id"] for m in members] == [owner.id]
    asked = ccmem(owner_token, "delete", team, check=False)  # no --yes, no terminal to answer
    assert asked.returncode == 1 and "needs --yes" in asked.stderr, asked
    assert json.loads(ccmem(owner_token, "list", "--json").stdout)["teams"]
    assert f"deleted team {team} and its 1 memory" in ccmem(owner_token, "delete", team, "--yes").stdout
    assert json.loads(ccmem(owner_token, "list", "--json").stdout)["teams"] == []


async def mcp_search(
    server: ApiServer, user: str, token: str, query: str, tools: str | None = None, **arguments: Any
) -> Any:
    url = f"{server.base_url}/mcp/claude-code/http/{user}" + (f"?tools={tools}" if tools else "")
    async with (
        httpx.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60) as http,
        streamable_http_client(url, http_client=http) as streams,
        ClientSession(streams[0], streams[1]) as session,
    ):
        await session.initialize()
        result = await session.call_tool("search_memory", {"query": query} | arguments)
        assert not result.is_error, result
        return json.loads(result.content[0].text)  # type: ignore[union-attr]


# -- the merge rule ----------------------------------------------------------------------------


def _hit(score: float, team: str | None = None) -> Hit:
    return Hit(memory=object(), score=score, app_name="a", team=team)  # type: ignore[arg-type]


@pytest.mark.unit
def test_merge_puts_personal_first_and_keeps_slots_for_teams() -> None:
    personal = [_hit(0.9), _hit(0.8), _hit(0.7), _hit(0.6)]
    shared = [_hit(0.5, "a"), _hit(0.95, "b"), _hit(0.1, "a")]
    merged = merge(personal, shared, limit=4, slots=2)
    assert merged == [personal[0], personal[1], shared[1], shared[0]]
    assert merge(personal[:1], shared, limit=4, slots=1) == [personal[0], shared[1], shared[0], shared[2]]
    assert merge(personal, [], limit=3, slots=2) == personal[:3]
    assert merge(personal, shared, limit=3, slots=0) == personal[:3]
