"""One search request, planned and run: ``SearchRequest`` (search/request.py), its plan
(search/planning.py), the pipeline and the teams' search running the same value, and the users and
apps both the write path and the tokens make in the database layer (db/get_or_create.py). Real
SQLite, Qdrant Edge and the ONNX model, in process."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

import claude_code_memory.engine  # noqa: F401 - first: it sets mem0's telemetry switches before mem0 loads
from claude_code_memory.auth.identity import Identity
from claude_code_memory.db.get_or_create import get_or_create_app, get_or_create_user
from claude_code_memory.errors import BadInput, TooLarge
from claude_code_memory.memories.service import MemoryService
from claude_code_memory.search.planning import MAX_QUERY_CHARS, SCOPE_CANDIDATES, WINDOW_CANDIDATES, plan
from claude_code_memory.search.request import SearchRequest
from tests.support.parts import open_service

pytestmark = pytest.mark.integration


@pytest.fixture
def service(tmp_path: Path) -> Iterator[MemoryService]:
    with open_service(tmp_path / "data") as opened:
        yield opened


def test_a_request_is_frozen_and_keeps_its_own_exclusions() -> None:
    given = {"a"}
    request = SearchRequest(user_id="alice", app_name="t", query="dogs", exclude=given)
    given.add("b")
    assert request.exclude == frozenset({"a"})
    with pytest.raises(dataclasses.FrozenInstanceError):
        request.limit = 20  # type: ignore[misc]
    assert dataclasses.replace(request, user_id="bob").exclude == frozenset({"a"})


def test_the_plan_refuses_what_a_search_cannot_run(service: MemoryService) -> None:
    settings, vectors = service.settings.search, service.vectors
    asked = SearchRequest(user_id="alice", app_name="t", query="dogs")
    for wrong, error in [
        (dataclasses.replace(asked, query=" "), BadInput),
        (dataclasses.replace(asked, query="x" * (MAX_QUERY_CHARS + 1)), TooLarge),
        (dataclasses.replace(asked, limit=0), BadInput),
        (dataclasses.replace(asked, limit=True), BadInput),
        (dataclasses.replace(asked, context=6), BadInput),
        (dataclasses.replace(asked, user_id="no spaces"), BadInput),
        (dataclasses.replace(asked, task="t1"), BadInput),  # a task needs its project
    ]:
        with pytest.raises(error):
            plan(wrong, settings, vectors)
    paris = datetime(2026, 3, 1, 13, 0, tzinfo=timezone(timedelta(hours=1)))
    planned = plan(dataclasses.replace(asked, now=paris), settings, vectors)
    assert planned.request.now == datetime(2026, 3, 1, 12, 0)  # naive UTC
    assert planned.request.now.tzinfo is None


def test_the_plan_says_how_deep_each_retriever_looks_and_what_it_leaves_out(service: MemoryService) -> None:
    settings, vectors = service.settings.search, service.vectors
    asked = SearchRequest(user_id="alice", app_name="t", query="what did we decide about dogs")
    plain = plan(asked, settings, vectors)
    assert plain.filters == {"user_id": "alice", "state": "active"}
    assert plain.depth == plain.candidates == settings.candidates
    assert plain.scope is None and not plain.drop_after and not plain.excluded_inside
    # A date the query names: each retriever looks deeper for memories from then.
    july = dataclasses.replace(asked, query="what did we decide about dogs in July 2023")
    dated = plan(july, settings, vectors)
    assert dated.temporal.looks_deeper and dated.depth == WINDOW_CANDIDATES
    # The embedded store reads a scope and the ids to leave out: both inside the retrievers.
    scoped = plan(dataclasses.replace(asked, current_project="web", exclude={"x"}), settings, vectors)
    assert scoped.scope == "web" and "project" in scoped.filters
    assert scoped.excluded_inside == frozenset({"x"}) and scoped.drop_after == ()
    assert scoped.depth == settings.candidates
    # A task, or global memories only: kept after the retrievers, which look deeper for them.
    task = plan(dataclasses.replace(asked, project="web", task="login"), settings, vectors)
    assert task.candidates == max(settings.candidates, SCOPE_CANDIDATES)
    assert plan(dataclasses.replace(asked, global_only=True), settings, vectors).candidates == task.candidates
    assert task.ranking_project is None and scoped.ranking_project == "web"


def test_the_pipeline_and_the_teams_search_run_the_same_request(service: MemoryService) -> None:
    service.writes.add_memory(user_id="alice", app_name="t", text="Alice's dog Rex sleeps all day")
    service.writes.add_memory(user_id="alice", app_name="t", text="The build uses make and ninja")
    asked = SearchRequest(user_id="alice", app_name="t", query="Which dog sleeps?", limit=5)
    own = [hit.memory.content for hit in service.pipeline.search(asked)]
    assert own[0] == "Alice's dog Rex sleeps all day"
    # Without teams, the merged search is the user's own.
    assert [hit.memory.content for hit in service.team_search.search(asked)] == own
    # The team scope: none of the user's own memories, whoever runs it.
    assert service.pipeline.search(dataclasses.replace(asked, teams_only=True)) == []
    assert service.team_search.search(dataclasses.replace(asked, teams_only=True)) == []
    # With a team, its shared memory comes labelled after the user's own.
    rule = "Our team's dog rule: no dogs that sleep in the lab"
    service.writes.add_memory(user_id="bob", app_name="t", text=rule)
    [shared_id] = [m["id"] for m in service.reads.list_memories(user_id="bob", app_name="t")]
    service.teams.create("bob", "lab")
    service.team_memories.share("bob", "lab", [shared_id])
    code = service.teams.invite("bob", "lab", "alice", "reader")["code"]
    service.teams.accept("alice", code)
    merged = service.team_search.search(asked)
    assert [hit.team for hit in merged] == [None] * (len(merged) - 1) + ["lab"]
    teams_only = service.team_search.search(dataclasses.replace(asked, teams_only=True))
    assert [(hit.team, hit.memory.content) for hit in teams_only] == [("lab", rule)]


def test_a_token_and_a_write_make_the_same_user_in_the_database_layer(service: MemoryService) -> None:
    Identity(service.database, None).create_token("carol")
    service.writes.add_memory(user_id="carol", app_name="notes", text="Carol prefers tabs")
    with service.database.session() as session:
        user = get_or_create_user(session, "carol")
        app = get_or_create_app(session, user, "notes")
        assert (user.user_id, app.name, app.owner_id, app.is_active) == ("carol", "notes", user.id, True)
        assert get_or_create_user(session, "carol").id == user.id
        assert get_or_create_app(session, user, "notes").id == app.id
    with pytest.raises(BadInput):
        Identity(service.database, None).create_token("not a name")
