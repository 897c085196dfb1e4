"""The LongMemEval harness (bench/quality/longmemeval.py) on a tiny haystack whose answers are known,
through the real service in process (SQLite, Qdrant Edge, the ONNX embedder); and a search asked
at a point in time, whose "last Saturday" counts back from the day it is asked."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

import pytest

from bench.quality import longmemeval as bench
from claude_code_memory.search.request import SearchRequest
from tests.support.chat import ABOUT_THE_REPLY, ABOUT_THE_USER, PLANT_CHAT

pytestmark = pytest.mark.integration

CHATTER = (
    "That sounds lovely! Here are some ideas you might enjoy: first, consider the weather and plan "
    "around it; second, make a list of what you need; third, invite a friend along. "
) * 3


def _question(qid: str, kind: str, question: str, date: str, sessions: list[tuple[str, str, list]]) -> dict:
    return {
        "question_id": qid,
        "question_type": kind,
        "question": question,
        "answer": "",
        "question_date": date,
        "haystack_session_ids": [sid for sid, _, _ in sessions],
        "haystack_dates": [day for _, day, _ in sessions],
        "haystack_sessions": [turns for _, _, turns in sessions],
        "answer_session_ids": [sid for sid, _, _ in sessions if sid.startswith("answer_")],
    }


def _turn(role: str, content: str, has_answer: bool = False) -> dict:
    return {"role": role, "content": content, **({"has_answer": True} if has_answer else {})}


HAYSTACK = [
    _question(
        "q-dog",
        "single-session-user",
        "What breed is my dog?",
        "2023/06/01 (Thu) 10:00",
        [
            (
                "s-cook",
                "2023/05/02 (Tue) 09:00",
                [_turn("user", "I baked sourdough bread today."), _turn("assistant", CHATTER)],
            ),
            (
                "answer_1",
                "2023/05/10 (Wed) 18:30",
                [_turn("user", "My dog Rex is a three-legged greyhound.", True), _turn("assistant", CHATTER)],
            ),
            (
                "s-trip",
                "2023/05/20 (Sat) 12:00",
                [_turn("user", "We drove to the coast for a trip."), _turn("assistant", CHATTER)],
            ),
        ],
    ),
    _question(
        "q-gone_abs",
        "single-session-user",
        "What colour is my car?",
        "2023/06/01 (Thu) 10:00",
        [("s-x", "2023/05/02 (Tue) 09:00", [_turn("user", "Nothing about cars here.")])],
    ),
]


def test_a_question_is_scored_from_its_ranked_turns() -> None:
    at = datetime(2023, 5, 1)
    miss, evidence, same_session = (
        bench.Turn("x", "assistant", 0, at, False),
        bench.Turn("y", "user", 2, at, True),
        bench.Turn("z", "assistant", 2, at, False),
    )
    ranked = [miss, None, miss, same_session, miss, miss, evidence]
    row = bench.scored(ranked, answers={2})
    assert row["session_any@5"] == 1.0 and row["mrr_session"] == 1 / 4
    assert row["distinct_session_any@5"] == 1.0
    assert row["turn_any@10"] == 1.0 and row["mrr_turn"] == 1 / 7
    assert bench.scored([miss] * 12, answers={2})["session_any@10"] == 0.0


def test_dates_of_the_data_are_read() -> None:
    assert bench.moment("2023/05/20 (Sat) 02:21") == datetime(2023, 5, 20, 2, 21)


def test_the_harness_finds_the_known_answer_and_leaves_abstentions_out() -> None:
    report = bench.run(HAYSTACK, [("no-length", {"search.length_prior": "0"})], cache=None)
    assert report["questions"] == 1 and report["turns"] == 6
    defaults = report["defaults"]
    assert defaults["session_any@5"] == 1.0 and defaults["distinct_session_any@10"] == 1.0
    assert defaults["turn_any@10"] == 1.0 and defaults["mrr_session"] == 1.0
    assert defaults["by_type"]["single-session-user"]["n"] == 1
    assert report["no-length"]["settings"] == {"search.length_prior": "0"}


def test_the_server_never_sees_what_names_the_evidence(tmp_path: Path) -> None:
    harness = bench.Bench(tmp_path / "data")
    try:
        harness.write("u", bench.haystack(HAYSTACK[0]))
        asked = SearchRequest(user_id="u", app_name=bench.APP, query="dog", limit=10)
        stored = harness.service.pipeline.search(asked)
        for hit in stored:
            assert "answer" not in (hit.memory.conversation_id or "")
            assert "has_answer" not in str(hit.memory.metadata_ or {})
    finally:
        harness.close()


def test_last_saturday_counts_back_from_when_the_search_is_asked(tmp_path: Path) -> None:
    harness = bench.Bench(tmp_path / "data")
    at = bench.moment
    try:
        turns = [
            bench.Turn(
                "I cooked a mushroom risotto for dinner.", "user", 0, at("2023/05/06 (Sat) 19:00"), False
            ),
            bench.Turn("I cooked a lamb curry for dinner.", "user", 1, at("2023/05/13 (Sat) 19:00"), False),
            bench.Turn("I cooked pancakes for dinner.", "user", 2, at("2023/05/20 (Sat) 19:00"), False),
        ]
        harness.write("u", turns)
        for asked, expected in (("2023/05/09 (Tue) 09:00", 0), ("2023/05/16 (Tue) 09:00", 1)):
            ranked, _ = harness.search("u", "What did I cook last Saturday?", at(asked), {})
            assert ranked[0] is not None and ranked[0].session == expected, (asked, ranked[:3])
    finally:
        harness.close()


def test_of_two_memories_that_disagree_the_newer_answers_what_stands_now(tmp_path: Path) -> None:
    harness = bench.Bench(tmp_path / "data")
    at = bench.moment
    try:
        # The newer statement written first, so that write order cannot decide; the older one
        # holds more of the question's words.
        turns = [
            bench.Turn(
                "I ran the 5K in 25 minutes today, a new personal best.",
                "user",
                1,
                at("2023/05/02 (Tue) 19:00"),
                False,
            ),
            bench.Turn(
                "My current personal best for the 5K is 27 minutes.",
                "user",
                0,
                at("2023/03/02 (Thu) 19:00"),
                False,
            ),
        ]
        harness.write("u", turns)
        present = {"search.present_margin": "0.3"}
        asked = at("2023/06/01 (Thu) 09:00")
        for query in ("What is my current personal best for the 5K?", "What is my 5K personal best now?"):
            ranked, _ = harness.search("u", query, asked, present)
            assert [t.session for t in ranked[:2] if t is not None] == [1, 0], query
    finally:
        harness.close()


def test_a_users_short_statement_outranks_the_assistants_long_replies_about_it(tmp_path: Path) -> None:
    # LongMemEval's shape: the user's one-line fact between long assistant replies that repeat
    # the question's words. Through the service (real SQLite, Edge, the model), roles in metadata.
    harness = bench.Bench(tmp_path / "data")
    at = bench.moment("2023/05/20 (Sat) 20:05")
    turns = [
        bench.Turn(text, role, 0, at + timedelta(seconds=n), False)
        for n, (role, text) in enumerate(PLANT_CHAT)
    ]
    turns.append(
        bench.Turn("What should I plant on my balcony this spring?", "user", 1, at + timedelta(days=1), False)
    )
    try:
        harness.write("u", turns)
        asked = bench.moment("2023/05/30 (Tue) 21:51")
        # The coverage step off on both sides: the statement holds more of the question's words.
        only_roles = {"search.coverage_share": "0"}
        off, _ = harness.search("u", ABOUT_THE_USER, asked, only_roles | {"search.role_boost": "0"})
        on, _ = harness.search("u", ABOUT_THE_USER, asked, only_roles)
        assert off[0] is not None and off[0].role == "assistant"  # the chatter first without the step
        assert on[0] is turns[0]  # the user's own statement first with it (the default)
        # A question about what the assistant said still has the assistant's reply first.
        told, _ = harness.search("u", ABOUT_THE_REPLY, asked, {})
        assert told[0] is not None and told[0].role == "assistant"
    finally:
        harness.close()


def test_the_halves_are_fixed_by_question_id_and_reported_apart() -> None:
    # A fixed rule: the same id is always in the same half, and both halves are used.
    ids = [f"q{n}" for n in range(40)]
    assert [bench.half_of(i) for i in ids] == [bench.half_of(i) for i in ids]
    assert {bench.half_of(i) for i in ids} == {"tune", "score"}
    report = bench.run(HAYSTACK, [], cache=None)
    half = bench.half_of(HAYSTACK[0]["question_id"])
    assert report["defaults"]["by_half"][half]["questions"] == 1
    assert report["defaults"]["by_half"][half]["turn_any@10"] == 1.0


def test_a_kept_store_is_searched_again_without_writing(tmp_path: Path) -> None:
    first = bench.run(HAYSTACK, [], cache=None, store=tmp_path / "store")
    again = bench.run(HAYSTACK, [], cache=None, store=tmp_path / "store")
    assert "ingest_per_s" in first and "ingest_per_s" not in again  # nothing written the second time
    assert again["defaults"]["mrr_turn"] == first["defaults"]["mrr_turn"] == 1.0
    assert again["turns"] == first["turns"] == 6
