"""Relative times, events and order in search queries, end to end: the temporal corpus of our own
phrasing (tests/corpora/temporal_corpus.py) stored as a capture would store it, every question
asked through REST (real server, real stores) as its conversation ends (``now``: the last turn's
time)."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta

import httpx
import pytest

from tests.corpora.temporal_corpus import build
from tests.support.servers import ApiServer, StartServer


@pytest.fixture(scope="module")
def srv(start_module_server: StartServer) -> ApiServer:
    return start_module_server(in_process=True)


def _store(c: httpx.Client, conversation: dict) -> tuple[dict[str, str], str]:
    """Every turn as one memory, its session as conversation and its time as captured_at;
    returns memory id -> dialog id, and the last turn's time."""
    body = conversation["conversation"]
    items, dialog_ids = [], []
    number = 1
    while f"session_{number}" in body:
        start = datetime.strptime(body[f"session_{number}_date_time"], "%I:%M %p on %d %B, %Y")
        for position, turn in enumerate(body[f"session_{number}"]):
            at = start + timedelta(seconds=position)
            items.append(
                {
                    "text": f"{turn['speaker']}: {turn['text']}",
                    "conversation_id": f"session-{number}",
                    "captured_at": at.isoformat() + "Z",
                }
            )
            dialog_ids.append(turn["dia_id"])
        number += 1
    response = c.post("/api/v1/memories/batch", json={"app": "chat", "items": items})
    assert response.status_code == 200 and response.json()["failed"] == 0, response.text
    ids = {o["results"][0]["id"]: d for o, d in zip(response.json()["results"], dialog_ids, strict=True)}
    return ids, max(item["captured_at"] for item in items)


@pytest.fixture(scope="module")
def ranked(srv: ApiServer) -> list[tuple[dict, list[str | None]]]:
    """(question, dialog ids of the top 5) for every question of the corpus."""
    out = []
    for conversation in build():
        token = srv.make_token(f"t{uuid.uuid4().hex[:10]}")
        with srv.client(token) as c:
            by_memory, end = _store(c, conversation)
            for qa in conversation["qa"]:
                body = {"query": qa["question"], "app": "chat", "limit": 5, "now": end}
                response = c.post("/api/v1/memories/search", json=body)
                assert response.status_code == 200, response.text
                out.append((qa, [by_memory.get(r["id"]) for r in response.json()["results"]]))
    return out


def test_relative_times_find_what_happened_then(ranked: list[tuple[dict, list[str | None]]]) -> None:
    # Measured with the temporal steps: recall@1 0.78, @5 1.0; with them off 0.33 and 0.74
    # (docs/search.md). The corpus's times are in 2023-2025: read against the server's clock
    # (2026 and later), "yesterday" would find nothing; asked as the conversation ends, it
    # finds the turn.
    first = [top[0] in qa["evidence"] for qa, top in ranked]
    within_five = [bool(set(top) & set(qa["evidence"])) for qa, top in ranked]
    missed = [qa["question"] for (qa, top), hit in zip(ranked, within_five, strict=True) if not hit]
    assert sum(within_five) / len(ranked) >= 0.95, missed
    assert sum(first) / len(ranked) >= 0.65, [
        qa["question"] for (qa, _), hit in zip(ranked, first, strict=True) if not hit
    ]


def test_yesterday_is_the_day_before_it_is_asked(ranked: list[tuple[dict, list[str | None]]]) -> None:
    by_question = {qa["question"]: top for qa, top in ranked}
    assert by_question["What did Nadia paint yesterday?"][0] == "D14:1"  # not Tom's watercolour
    assert by_question["What did Omar deploy yesterday?"][0] == "D18:1"  # not the search service
    assert "D5:1" in by_question["What class did Nadia start after the move?"][:3]  # not Spanish
