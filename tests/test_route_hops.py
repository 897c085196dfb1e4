"""The hot routes (a write, a search, a prompt's hook) run their work in one worker-thread hop.

FastAPI runs a sync route in a worker thread, and each sync dependency in one more (the
authentication reads the database for a user token); every hop is a hand-off between threads
that costs a request about half a millisecond, more while other threads hold the interpreter
(docs/performance.md). These routes authenticate inside the hop that does their work. Counted
here by wrapping anyio's ``to_thread.run_sync``, which Starlette and FastAPI hand each hop to.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import anyio.to_thread
import httpx
import pytest

from tests.support.servers import ApiServer, StartServer


@pytest.fixture(scope="module")
def srv(start_module_server: StartServer) -> ApiServer:
    return start_module_server(in_process=True)


@pytest.fixture
def hops(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the functions handed to a worker thread while the test runs."""
    handed: list[str] = []
    original = anyio.to_thread.run_sync

    async def counting(function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        handed.append(getattr(function, "__name__", repr(function)))
        return await original(function, *args, **kwargs)

    monkeypatch.setattr(anyio.to_thread, "run_sync", counting)
    return handed


def user_client(srv: ApiServer) -> httpx.Client:
    return srv.client(srv.make_token(f"hops-{uuid.uuid4().hex[:8]}"))


def test_a_write_is_one_hop_and_keeps_its_answer(srv: ApiServer, hops: list[str]) -> None:
    with user_client(srv) as client:
        hops.clear()  # making the token is not the request under test
        created = client.post(
            "/api/v1/memories", json={"text": "The staging database is db-7.", "app": "ops"}
        )
        assert created.status_code == 200, created.text
        assert len(hops) == 1, hops
        row = created.json()
        assert row["content"] == "The staging database is db-7." and row["state"] == "active"
        assert row["provenance"]["app"] == "ops" and "already_existed" not in row

        hops.clear()
        again = client.post("/api/v1/memories", json={"text": "The staging database is db-7.", "app": "ops"})
        assert len(hops) == 1, hops
        assert again.json()["already_existed"] is True and again.json()["id"] == row["id"]


def stored_everywhere(srv: ApiServer) -> int:
    with srv.client(srv.admin_token) as admin:
        users = admin.get("/api/v1/storage").json()["users"]
    return sum(row["memories"] + row["pending"] for row in users)


def test_a_write_without_a_valid_token_is_refused_and_stores_nothing(srv: ApiServer, hops: list[str]) -> None:
    before = stored_everywhere(srv)
    for token in (None, "not-a-token"):
        with srv.client(token) as anonymous:
            refused = anonymous.post("/api/v1/memories", json={"text": "written by nobody"})
        assert refused.status_code == 401, refused.text
    with user_client(srv) as client:
        assert client.post("/api/v1/memories", json={"text": ""}).status_code == 422
    assert stored_everywhere(srv) == before


def test_a_search_and_a_prompt_hook_are_one_hop_each(srv: ApiServer, hops: list[str]) -> None:
    with user_client(srv) as client:
        client.post("/api/v1/memories", json={"text": "Deploys go out on Thursdays.", "app": "ops"})
        hops.clear()
        found = client.post("/api/v1/memories/search", json={"query": "when do deploys go out?"})
        assert found.status_code == 200 and found.json()["results"]
        assert len(hops) == 1, hops

        hops.clear()
        hook = client.post(
            "/api/v1/hooks/claude-code",
            json={
                "hook_event_name": "UserPromptSubmit",
                "session_id": uuid.uuid4().hex,
                "cwd": "/tmp",
                "prompt": "when do deploys go out?",
            },
        )
        assert hook.status_code == 200
        assert "Thursdays" in hook.text
        assert len(hops) == 1, hops
