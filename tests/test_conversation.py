"""Order within a conversation (claude_code_memory.search.conversation): propagation of scores to
neighbouring turns (pure) and the neighbour queries on a real SQLite database."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text

from claude_code_memory.db.database import Database
from claude_code_memory.db.models import App, Memory, User
from claude_code_memory.domain.memory_state import MemoryState
from claude_code_memory.search.conversation import adjacent, around, lift, propagate

from .support import rows
from .support.rows import user_with_app

#: SQLite, then PostgreSQL (tests/support/rows.py).
database_url = rows.database_url


def test_propagate_lifts_the_neighbours_of_strong_hits() -> None:
    fused = [("question", 1.0), ("lone", 0.5), ("weak", 0.1)]
    adjacency = {"question": ["before", "answer"], "weak": ["answer"]}
    ranked = propagate(fused, adjacency, share=0.6)
    scores = dict(ranked)
    assert [memory_id for memory_id, _ in ranked][:2] == ["question", "answer"]
    assert scores["answer"] == 0.6 * 1.0 + 0.6 * 0.1  # from both of its neighbours
    assert scores["lone"] == 0.5 and scores["before"] == 0.6
    assert propagate(fused, {}, share=0.6) == fused  # no conversations: order unchanged


def test_propagate_gives_the_answer_after_a_question_a_larger_share() -> None:
    fused = [("question", 1.0), ("other", 0.5)]
    adjacency = {"question": ["before", "answer"], "other": ["answer"]}
    answers = {"question": "answer"}
    scores = dict(propagate(fused, adjacency, share=0.15, answers=answers, answer_share=0.5))
    assert scores["answer"] == pytest.approx(0.5 * 1.0 + 0.15 * 0.5)
    assert scores["before"] == pytest.approx(0.15)  # the turn before gains the usual share
    # Off (answer_share 0): every neighbour gains the same share, as before.
    off = dict(propagate(fused, adjacency, share=0.15, answers=answers, answer_share=0.0))
    assert off["answer"] == pytest.approx(0.15 * 1.0 + 0.15 * 0.5)


def test_lift_moves_a_conversations_candidates_towards_its_best() -> None:
    scored = [("a1", 1.0), ("lone", 0.9), ("b1", 0.8), ("a2", 0.5), ("b2", 0.4), ("a3", 0.2)]
    conversation_of = {"a1": "A", "a2": "A", "a3": "A", "b1": "B", "b2": "B"}
    lifted = lift(scored, conversation_of, share=0.5)
    scores = dict(lifted)
    # Each gains half the best score of its conversation; a lone memory half its own.
    assert scores == pytest.approx({"a1": 1.5, "lone": 1.35, "b1": 1.2, "a2": 1.0, "b2": 0.8, "a3": 0.7})
    assert [memory_id for memory_id, _ in lifted] == ["a1", "lone", "b1", "a2", "b2", "a3"]
    # The best of each conversation and the lone memories keep their order among themselves ...
    kept = lift([("lone", 0.9), ("a1", 0.5), ("b1", 0.4)], conversation_of, share=0.5)
    assert [memory_id for memory_id, _ in kept] == ["lone", "a1", "b1"]
    assert [score for _, score in kept] == pytest.approx([1.35, 0.75, 0.6])
    # ... while a lesser turn of a strong conversation passes a lone memory it trailed.
    flipped = lift([("a1", 1.0), ("lone", 0.6), ("a2", 0.45)], conversation_of, share=0.5)
    assert [memory_id for memory_id, _ in flipped] == ["a1", "a2", "lone"]
    assert lift([], conversation_of, share=0.5) == []
    assert lift(scored, conversation_of, share=0.0) == scored  # off: order and scores unchanged


def test_adjacent_and_around_walk_one_users_active_conversation(database_url: str) -> None:
    database = Database(database_url)
    database.migrate()
    start = datetime(2024, 3, 2, 10, 0)
    with database.session() as session:
        alice, bob = User(user_id="alice"), User(user_id="bob")
        session.add_all([alice, bob])
        session.flush()
        app, bob_app = App(owner_id=alice.id, name="t"), App(owner_id=bob.id, name="t")
        session.add_all([app, bob_app])
        session.flush()

        def turn(n: int, conversation: str | None = "c1", owner: User = alice, **extra: object) -> Memory:
            memory = Memory(
                user_id=owner.id,
                app_id=app.id if owner is alice else bob_app.id,
                content=f"turn {n}",
                conversation_id=conversation,
                captured_at=start + timedelta(seconds=n),
                **extra,
            )
            session.add(memory)
            return memory

        turns = [turn(n) for n in range(5)]
        paused = turn(5, state=MemoryState.paused)
        last = turn(6)
        other = turn(7, conversation="c2")
        loose = turn(8, conversation=None)
        foreign = turn(9, owner=bob)  # same conversation id, another user
        session.flush()
        ids = {m.content: str(m.id) for m in [*turns, paused, last, other, loose, foreign]}

        nearby = adjacent(
            session, [ids["turn 0"], ids["turn 2"], ids["turn 4"], ids["turn 8"], ids["turn 7"]]
        )
        found = nearby.neighbours
        assert found[ids["turn 0"]] == [ids["turn 1"]]
        assert found[ids["turn 2"]] == [ids["turn 1"], ids["turn 3"]]
        assert found[ids["turn 4"]] == [ids["turn 3"], ids["turn 6"]]  # the paused turn is skipped
        assert found[ids["turn 7"]] == []  # alone in its conversation
        assert ids["turn 8"] not in found  # no conversation
        # The turn right after each candidate that has one (the paused turn skipped).
        assert nearby.following == {
            ids["turn 0"]: ids["turn 1"],
            ids["turn 2"]: ids["turn 3"],
            ids["turn 4"]: ids["turn 6"],
        }
        # The conversation of each candidate and of its neighbours; none for the loose turn.
        in_c1 = ["turn 0", "turn 1", "turn 2", "turn 3", "turn 4", "turn 6"]
        assert nearby.conversation == {ids[name]: "c1" for name in in_c1} | {ids["turn 7"]: "c2"}
        empty = adjacent(session, [])
        assert empty.neighbours == {} and empty.conversation == {}

        context = around(session, turns[2], 3)
        assert [m.content for m in context["before"]] == ["turn 0", "turn 1"]
        assert [m.content for m in context["after"]] == ["turn 3", "turn 4", "turn 6"]
        assert around(session, loose, 2) == {"before": [], "after": []}
    database.close()


def _conversation(session: Any, owner: User, app: App, turns: int, start: datetime) -> list[Memory]:
    """One conversation of ``turns`` turns; pairs of turns share a ``captured_at`` (a writer
    that stamps seconds), so within a pair ``created_at`` orders them."""
    memories = [
        Memory(
            user_id=owner.id,
            app_id=app.id,
            content=f"turn {n}",
            conversation_id=f"long-{turns}",
            captured_at=start + timedelta(seconds=n // 2),
            created_at=start + timedelta(microseconds=n),
        )
        for n in range(turns)
    ]
    session.add_all(memories)
    session.flush()
    return memories


def test_neighbours_follow_created_at_among_turns_captured_at_the_same_time(database_url: str) -> None:
    database = Database(database_url)
    database.migrate()
    with database.session() as session:
        owner, app = user_with_app(session, "tied")
        turns = _conversation(session, owner, app, 6, datetime(2024, 5, 1, 9, 0))
        ids = [str(m.id) for m in turns]
        found = adjacent(session, ids).neighbours
        assert found[ids[0]] == [ids[1]]
        assert found[ids[1]] == [ids[0], ids[2]]  # the same captured_at as turn 0, created after it
        assert found[ids[2]] == [ids[1], ids[3]]
        assert found[ids[5]] == [ids[4]]
        context = around(session, turns[3], 2)
        assert [m.content for m in context["before"]] == ["turn 1", "turn 2"]
        assert [m.content for m in context["after"]] == ["turn 4", "turn 5"]
    database.close()


def test_finding_neighbours_does_not_read_the_whole_conversation_on_sqlite(tmp_path: Path) -> None:
    """SQLite's virtual-machine steps for one neighbour lookup of 40 turns, in a conversation of
    60 turns and in one of 4,000: each neighbour is an index seek, so the long conversation
    costs about what the short one does. (Before migration 0014 the lookup read every turn of
    the conversation, ~100 times the steps at 4,000 turns.)"""
    database = Database(f"sqlite:///{tmp_path / 'memory.db'}")
    database.migrate()
    steps: dict[int, int] = {}
    counted = [0]

    def step() -> int:
        counted[0] += 1
        return 0  # go on

    with database.session() as session:
        owner, app = user_with_app(session, "long")
        for size in (60, 4000):
            turns = _conversation(session, owner, app, size, datetime(2024, 6, 1) + timedelta(days=size))
            middle = [str(m.id) for m in turns[size // 2 - 20 : size // 2 + 20]]
            raw = session.connection().connection.driver_connection
            counted[0] = 0
            raw.set_progress_handler(step, 100)
            try:
                found = adjacent(session, middle)
            finally:
                raw.set_progress_handler(None, 100)
            steps[size] = counted[0]
            assert found.neighbours[middle[0]] == [str(turns[size // 2 - 21].id), middle[1]]
    assert steps[60] > 0
    assert steps[4000] < 2 * steps[60], steps


@pytest.mark.postgres
def test_finding_neighbours_seeks_the_conversation_index_on_postgresql(postgres_url: str) -> None:
    """PostgreSQL's plan for the neighbour lookup puts the turn's time in the index condition (a
    seek), not in a filter over every turn of the conversation."""
    from claude_code_memory.search.conversation import _ADJACENT

    database = Database(postgres_url)
    database.migrate()
    with database.session() as session:
        session.execute(text("SET LOCAL enable_seqscan = off"))
        statement = _ADJACENT.params(ids=[uuid.uuid4()]).compile(
            dialect=session.get_bind().dialect, compile_kwargs={"literal_binds": True}
        )
        plan = "\n".join(row[0] for row in session.execute(text(f"EXPLAIN {statement}")))
    database.close()
    conditions = [line for line in plan.splitlines() if "Index Cond" in line and "conversation_id" in line]
    assert len(conditions) == 2 and all("captured_at" in line for line in conditions), plan
