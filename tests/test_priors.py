"""What a memory's text says about whether it holds an answer (claude_code_memory.search.priors,
pure), and the ranking step that applies it to candidates read from a real SQLite database."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from claude_code_memory.config import SearchSettings
from claude_code_memory.db.database import Database
from claude_code_memory.db.models import App, Memory, User
from claude_code_memory.search.priors import (
    asks,
    asks_when,
    length_prior,
    named_speakers,
    names_a_time,
    speaker,
    speaker_first,
    time_boost,
)
from claude_code_memory.search.ranking import ReadAhead, rank, read_ahead


def test_asks_finds_a_sentence_that_ends_with_a_question_mark() -> None:
    for question in (
        "Ben: That's great news! What breed is it?",
        "Did it work? I changed the port.",
        'She asked "where to?" and left.',
        "Really?!",
        "これは何ですか？",
    ):
        assert asks(question), question
    for statement in (
        "Ann: A three-legged greyhound named Biscuit.",
        "Open http://localhost:8765/search?q=dog&limit=3 in the browser.",
        "return ok ? value : fallback;",
        "",
    ):
        assert not asks(statement), statement


def test_length_prior_moves_short_memories_down_and_adapts_to_the_store() -> None:
    scored = [("short", 1.0), ("long", 0.8), ("longer", 0.7), ("longest", 0.6), ("unknown", 0.5)]
    lengths = {"short": 25, "long": 100, "longer": 150, "longest": 400}
    ranked = length_prior(scored, lengths, exponent=0.5)
    scores = dict(ranked)
    # The reference is the 75th percentile of the lengths known (150 here): a memory at least
    # that long keeps its score, a shorter one loses by the square root of its share of it.
    assert scores["longer"] == 0.7 and scores["longest"] == 0.6
    assert scores["short"] == pytest.approx(1.0 * (25 / 150) ** 0.5)
    assert scores["long"] == pytest.approx(0.8 * (100 / 150) ** 0.5)
    assert scores["unknown"] == 0.5  # no text read: left as it was
    assert [memory_id for memory_id, _ in ranked] == ["longer", "long", "longest", "unknown", "short"]
    # Where every memory is as short, nobody loses: the prior compares within the candidates.
    same = [("a", 1.0), ("b", 0.9)]
    assert length_prior(same, {"a": 20, "b": 20}, exponent=0.5) == same
    assert length_prior(scored, lengths, exponent=0) == scored  # off


def test_a_capped_reference_spares_a_short_statement_among_long_replies() -> None:
    # A user's one-line fact among an assistant's pages: the 75th percentile is a page.
    scored = [("reply", 1.0), ("reply2", 0.95), ("reply3", 0.9), ("fact", 0.9)]
    lengths = {"reply": 2400, "reply2": 2000, "reply3": 1800, "fact": 150}
    uncapped = dict(length_prior(scored, lengths, exponent=0.5))
    assert uncapped["fact"] == pytest.approx(0.9 * (150 / 2000) ** 0.5)
    capped = length_prior(scored, lengths, exponent=0.5, most=300)
    assert dict(capped)["fact"] == pytest.approx(0.9 * (150 / 300) ** 0.5)
    assert dict(capped)["reply"] == 1.0  # long texts keep their score either way
    # Below the cap, the candidates' own lengths decide as before.
    short = [("a", 1.0), ("b", 0.9), ("c", 0.8), ("d", 0.7)]
    short_lengths = {"a": 20, "b": 100, "c": 150, "d": 150}
    assert length_prior(short, short_lengths, 0.5, most=300) == length_prior(short, short_lengths, 0.5)


def test_when_questions_and_texts_that_say_when() -> None:
    for query in ("When did Ann adopt the dog?", "what date was the launch", "How long ago did we move?"):
        assert asks_when(query), query
    for query in ("What breed is the dog?", "Where did we go when it rained?", "whenever"):
        assert not asks_when(query), query
    for text in ("I adopted him yesterday.", "We moved in May.", "Back in 2019 it was cheaper.",
                 "Two weeks ago we flew out.", "See you on Friday!"):  # fmt: skip
        assert names_a_time(text), text
    assert not names_a_time("A three-legged greyhound named Biscuit.")
    boosted = time_boost(
        [("breed", 1.0), ("when", 0.9)], {"breed": "A greyhound.", "when": "Yesterday."}, 0.3
    )
    assert boosted == [("when", pytest.approx(0.9 * 1.3)), ("breed", 1.0)]


def test_a_turn_s_speaker_and_the_speakers_a_query_names() -> None:
    assert speaker("Maria: I joined a gym last week!") == "Maria"
    assert speaker("Ann Lee: the train was late") == "Ann Lee"
    assert speaker("  Jon: Took a short trip to Rome.") == "Jon"
    # A role names no person (captured Claude Code turns open with one); no label, no speaker.
    assert speaker("User: how do I run the tests?") is None
    assert speaker("Assistant: Run `make test`.") is None
    for text in ("I joined a gym", "maria: lower case", "Note:no space", "At 10:30 we met"):
        assert speaker(text) is None, text
    labels = ["Maria", "John", "Ann Lee", None]
    assert named_speakers("What did Maria say about the waterfall?", labels) == {"Maria"}
    assert named_speakers("Where did Maria's family go?", labels) == {"Maria"}
    assert named_speakers("What did Ann tell John?", labels) == {"Ann Lee", "John"}
    # As a word of its own, capitalised as the label is.
    assert named_speakers("What did maria say?", labels) == set()
    assert named_speakers("Did Johnny come?", labels) == set()


def test_the_named_speaker_s_turns_move_up_unless_every_speaker_is_named() -> None:
    speakers = {"reply": "John", "own": "Maria", "fact": None}
    scored = [("reply", 1.0), ("own", 0.8), ("fact", 0.5)]
    assert speaker_first(scored, speakers, {"Maria"}, 0.5) == [
        ("own", pytest.approx(1.2)),
        ("reply", 1.0),
        ("fact", 0.5),
    ]
    # Naming every speaker among the candidates tells nobody's turns apart: unchanged (and
    # turns with no speaker do not fall behind them).
    assert speaker_first(scored, speakers, {"Maria", "John"}, 0.5) == scored
    assert speaker_first(scored, speakers, set(), 0.5) == scored
    assert speaker_first(scored, speakers, {"Maria"}, 0.0) == scored


START = datetime(2024, 3, 2, 10, 0, tzinfo=UTC).replace(tzinfo=None)
TURNS = [
    "Ann: I finally adopted a dog last weekend, after months of looking at shelters.",
    "Ben: That's great news! What breed is the dog?",
    "Ann: A three-legged greyhound named Biscuit, from the shelter in Leith. He sleeps all day.",
    "Ben: Ha, a dog that sleeps.",
    "Ann: My sister's cat ignores him completely, which is probably for the best.",
]


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def session_with_turns(request: pytest.FixtureRequest, tmp_path: Path):  # type: ignore[no-untyped-def]
    # SQLite reads the texts' shapes with its own statement (straight to the driver);
    # PostgreSQL through the ORM.
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'memory.db'}"
    else:
        url = str(request.getfixturevalue("postgres_url"))
    database = Database(url)
    database.migrate()
    with database.session() as session:
        user = User(user_id="ann")
        session.add(user)
        session.flush()
        app = App(owner_id=user.id, name="chat")
        session.add(app)
        session.flush()
        memories = [
            Memory(
                user_id=user.id,
                app_id=app.id,
                content=text,
                conversation_id="s1",
                captured_at=START + timedelta(seconds=n),
            )
            for n, text in enumerate(TURNS)
        ]
        session.add_all(memories)
        session.flush()
        yield session, [str(m.id) for m in memories]
    database.close()


def ranked(
    session, ids: list[str], dense: list[int], keyword: list[int], query: str, **settings: float
) -> list[int]:  # type: ignore[no-untyped-def]
    order = rank(
        session,
        [ids[n] for n in dense],
        [ids[n] for n in keyword],
        query=query,
        named=[],
        candidates=20,
        settings=SearchSettings(**settings),
        clock=datetime.now,
    )
    return [ids.index(memory_id) for memory_id, _ in order]


def test_the_answer_after_a_question_and_long_turns_rank_up(session_with_turns) -> None:  # type: ignore[no-untyped-def]
    session, ids = session_with_turns
    # "What breed is Ann's dog?": both retrievers rank Ben's question (its words) first and the
    # short "a dog that sleeps" next; the answer comes third in one list only.
    dense, keyword = [1, 3, 2], [1, 3, 0]
    query = "What breed is Ann's dog?"
    off = {"answer_share": 0.0, "length_prior": 0.0, "when_boost": 0.0, "speaker_boost": 0.0}
    assert ranked(session, ids, dense, keyword, query, **off)[:3] == [1, 3, 2]
    # The answer gains half its question's score instead of 15%: it passes the short turn.
    assert ranked(session, ids, dense, keyword, query, **(off | {"answer_share": 0.5}))[:2] == [1, 2]
    # "What did Ann's dog do all day?": the short "a dog that sleeps" leads both lists, the
    # answer follows; the length prior moves the short turn down.
    query = "What did Ann's dog do all day?"
    assert ranked(session, ids, [3, 2], [3, 2], query, **off)[0] == 3
    assert ranked(session, ids, [3, 2], [3, 2], query, **(off | {"length_prior": 0.5}))[0] == 2
    # A "when" question prefers the turn that says when.
    when = "When did Ann adopt a dog?"
    assert ranked(session, ids, [2, 0], [2, 0], when, **off)[0] == 2
    assert ranked(session, ids, [2, 0], [2, 0], when, **(off | {"when_boost": 0.3}))[0] == 0


def test_a_question_about_what_someone_said_ranks_their_own_turn_first(session_with_turns) -> None:  # type: ignore[no-untyped-def]
    session, ids = session_with_turns
    # "What did Ben say about the sleeping dog?": Ann's turn about her dog sleeping all day leads
    # both lists; Ben's own remark follows (the length prior, which moves his short remark down,
    # is left out).
    query = "What did Ben say about the sleeping dog?"
    off = {"speaker_boost": 0.0, "length_prior": 0.0}
    assert ranked(session, ids, [2, 3], [2, 3], query, **off)[:2] == [2, 3]
    assert ranked(session, ids, [2, 3], [2, 3], query, speaker_boost=0.5, length_prior=0.0)[:2] == [3, 2]
    # A question naming both speakers, or none, is ranked as without the step.
    for unchanged in ("What did Ann and Ben say about the sleeping dog?", "Which dog sleeps all day?"):
        assert ranked(session, ids, [2, 3], [2, 3], unchanged) == ranked(
            session, ids, [2, 3], [2, 3], unchanged, speaker_boost=0.0
        )


def ranking_of(  # type: ignore[no-untyped-def]
    session,
    dense: list[str],
    keyword: list[str],
    query: str,
    settings: SearchSettings,
    ahead: ReadAhead | None,
) -> list[tuple[str, float]]:
    return rank(
        session,
        dense,
        keyword,
        query=query,
        named=[],
        candidates=20,
        settings=settings,
        clock=datetime.now,
        ahead=ahead,
    )


@pytest.mark.parametrize("when_boost", [0.0, 0.3])
def test_reading_ahead_the_keyword_candidates_ranks_exactly_as_reading_after(  # type: ignore[no-untyped-def]
    session_with_turns, when_boost: float
) -> None:
    # The search reads the keyword half's candidates' neighbours and shapes on that half's
    # thread (search/pipeline.py); the ranking then reads only the other candidates'.
    session, ids = session_with_turns
    settings = SearchSettings(when_boost=when_boost)
    unknown = str(uuid.uuid4())  # a candidate with no row (a vector whose row is gone)
    cases = [
        ([1, 3, 2], [1, 3, 0], "What breed is Ann's dog?"),
        ([3, 2], [4, 0], "What did Ben say about the sleeping dog?"),
        ([0, 4], [2], "When did Ann adopt a dog?"),
        ([2], [], "Which dog sleeps all day?"),
    ]
    for dense, keyword, query in cases:
        dense_ids = [ids[n] for n in dense]
        keyword_ids = [ids[n] for n in keyword] + [unknown]
        ahead = read_ahead(session, keyword_ids, query=query, settings=settings)
        assert ahead.asked == frozenset(keyword_ids)
        assert {ids[n] for n in keyword} <= ahead.shaped
        assert ahead.full == (when_boost > 0 and query.startswith("When"))
        without = ranking_of(session, dense_ids, keyword_ids, query, settings, None)
        assert ranking_of(session, dense_ids, keyword_ids, query, settings, ahead) == without
    # Settings that read no shapes: the neighbours only are read ahead, and the ranking is the same.
    plain = SearchSettings(length_prior=0.0, when_boost=0.0, speaker_boost=0.0, answer_share=0.0)
    ahead = read_ahead(session, [ids[1]], query="dog", settings=plain)
    assert (
        ahead.asked == {ids[1]} and not ahead.shaped and ahead.nearby.neighbours[ids[1]] == [ids[0], ids[2]]
    )
    without = ranking_of(session, [ids[2]], [ids[1]], "dog", plain, None)
    assert ranking_of(session, [ids[2]], [ids[1]], "dog", plain, ahead) == without
