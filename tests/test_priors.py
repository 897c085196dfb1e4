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
    asked_role,
    asks,
    asks_about_present,
    asks_when,
    coverage,
    coverage_first,
    length_prior,
    named_speakers,
    names_a_time,
    role,
    role_first,
    speaker,
    speaker_first,
    stems,
    time_boost,
)
from claude_code_memory.search.ranking import Candidates, ReadAhead, rank, read_ahead


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


def test_asked_role_tells_questions_about_the_user_from_questions_about_the_assistant() -> None:
    for about_user in (
        "How many plants did I acquire in the last month?",
        "Where did I complete my Bachelor's degree?",
        "What is my sister's name?",
        "Do you think it would be a good idea to attend my high school reunion?",
        "Can you remind me where I parked?",
        "Did Ann text me yesterday?",
    ):
        assert asked_role(about_user) == "user", about_user
    for about_assistant in (
        "What did you recommend for my snake plant?",
        "Can you remind me of the Instagram handle you mentioned?",
        "I'm going back to our previous conversation about the grant. What were the three aims?",
        "What was your suggestion for a weekend in Rome?",
        "Did you say the museum opens at nine?",
        "I'm looking back at the songs you created for me: what was the chorus?",
    ):
        assert asked_role(about_assistant) == "assistant", about_assistant
    for nobody in (
        "How long did Alex marinate the ribs?",
        "Which seeds were started first?",
        "i/o limits",
        "Tell me the capital of France.",  # a request made of "me" is not about the user
        "Can you remind me of the hotel's name?",
    ):
        assert asked_role(nobody) is None, nobody


def test_role_reads_the_two_chat_roles_in_any_case_and_nothing_else() -> None:
    assert role("user") == "user" and role(" Assistant ") == "assistant"
    for other in ("system", "tool", "", None, 5, ["user"]):
        assert role(other) is None


def test_role_first_moves_the_other_roles_turns_down_and_leaves_the_rest() -> None:
    scored = [("reply", 1.0), ("fact", 0.8), ("note", 0.7), ("other-reply", 0.5)]
    roles = {"reply": "assistant", "fact": "user", "note": None, "other-reply": "assistant"}
    ranked = role_first(scored, roles, "user", 0.5)
    assert [m for m, _ in ranked] == ["fact", "note", "reply", "other-reply"]
    assert dict(ranked)["reply"] == pytest.approx(1 / 1.5) and dict(ranked)["fact"] == 0.8
    # A question about what the assistant said moves the user's turns down instead.
    about_reply = role_first(scored, roles, "assistant", 0.5)
    assert [m for m, _ in about_reply] == ["reply", "note", "fact", "other-reply"]
    # A memory without a role is never moved; no role asked for, or no share: unchanged.
    assert dict(role_first(scored, roles, "user", 0.5))["note"] == 0.7
    assert role_first(scored, roles, None, 0.5) == scored
    assert role_first(scored, roles, "user", 0.0) == scored


def test_coverage_counts_the_query_words_a_text_holds_by_their_first_letters() -> None:
    words = stems(["hikes", "consecutive", "weekends", "of", "hikes"])
    assert words == ["hikes", "conse", "weeke"]  # five letters, short words and repeats dropped
    assert coverage("Two consecutive WEEKENDS of hikes", words) == 1.0
    assert coverage("I hiked on a weekend", words) == pytest.approx(1 / 3)  # "weekend" holds "weeke"
    assert coverage("unconsecutive reweekends", words) == 0.0  # a prefix must begin a word
    assert coverage("anything", []) == 0.0


def test_coverage_first_moves_up_the_candidates_that_hold_more_of_the_query() -> None:
    words = stems(["hikes", "consecutive", "weekends"])
    scored = [("topic", 1.0), ("answer", 0.8), ("unread", 0.7)]
    texts = {
        "topic": "Hiking boots need a break-in period.",
        "answer": "Two consecutive weekends of hikes: 12 km and 9 km.",
    }
    ranked = coverage_first(scored, texts, words, 0.5)
    assert [m for m, _ in ranked] == ["answer", "topic", "unread"]
    assert dict(ranked)["answer"] == pytest.approx(0.8 * 1.5) and dict(ranked)["topic"] == 1.0
    assert dict(ranked)["unread"] == 0.7  # no text read: left as it was
    # Off, or a query of one word: unchanged.
    assert coverage_first(scored, texts, words, 0.0) == scored
    assert coverage_first(scored, texts, stems(["hikes"]), 0.5) == scored


START = datetime(2024, 3, 2, 10, 0, tzinfo=UTC).replace(tzinfo=None)
TURNS = [
    "Ann: I finally adopted a dog last weekend, after months of looking at shelters.",
    "Ben: That's great news! What breed is the dog?",
    "Ann: A three-legged greyhound named Biscuit, from the shelter in Leith. He sleeps all day.",
    "Ben: Ha, a dog that sleeps.",
    "Ann: My sister's cat ignores him completely, which is probably for the best.",
]


def _session_with(request: pytest.FixtureRequest, tmp_path: Path, memories: list[dict]):  # type: ignore[no-untyped-def]
    """A session on a fresh database (SQLite, or PostgreSQL by the fixture's param) holding one
    user's ``memories`` (Memory's fields besides the owner), and their ids in that order.
    SQLite reads the texts' shapes with its own statement (straight to the driver); PostgreSQL
    through the ORM."""
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
        rows = [Memory(user_id=user.id, app_id=app.id, **fields) for fields in memories]
        session.add_all(rows)
        session.flush()
        yield session, [str(m.id) for m in rows]
    database.close()


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def session_with_turns(request: pytest.FixtureRequest, tmp_path: Path):  # type: ignore[no-untyped-def]
    turns = [
        {"content": text, "conversation_id": "s1", "captured_at": START + timedelta(seconds=n)}
        for n, text in enumerate(TURNS)
    ]
    yield from _session_with(request, tmp_path, turns)


#: A chat whose turns carry their role in metadata (as a chat client writes them), a memory
#: with no role, and roles that are none of the two.
CHAT = [
    ("user", "I got a snake plant from my sister and two succulents at the nursery this week."),
    (
        "assistant",
        "Congratulations on your new plants! Snake plants are very forgiving: water them every two "
        "to three weeks, let the soil dry out between waterings, and keep them in bright, indirect "
        "light. Succulents like the same treatment, with a gritty mix and a pot with a drainage hole. "
        "I recommend a cactus mix for both, and fertilizing once a month in spring and summer.",
    ),
    (None, "Owns plants: a snake plant and two succulents."),
    ("System", "Plants were discussed."),
]


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def session_with_chat(request: pytest.FixtureRequest, tmp_path: Path):  # type: ignore[no-untyped-def]
    chat = [
        {
            "content": text,
            "metadata_": {"role": said_by} if said_by else {"source": "note"},
            "created_at": START + timedelta(minutes=n),
        }
        for n, (said_by, text) in enumerate(CHAT)
    ]
    yield from _session_with(request, tmp_path, chat)


def test_a_question_about_the_user_ranks_their_statement_over_the_assistants_reply(session_with_chat) -> None:  # type: ignore[no-untyped-def]
    session, ids = session_with_chat
    # Both retrievers rank the assistant's long reply first (it repeats the words); the user's
    # own statement follows, then the note without a role and the turn of another role.
    lists = ([1, 0, 2, 3], [1, 0, 3, 2])
    question = "How many plants did I get this week?"
    assert ranked(session, ids, *lists, question, role_boost=0.0)[0] == 1
    with_roles = ranked(session, ids, *lists, question, role_boost=0.5)
    assert with_roles[:2] == [0, 1]
    # A question about what the assistant said keeps its reply first and moves the user's down.
    about_reply = "What did you recommend for the snake plant?"
    assert ranked(session, ids, [0, 1, 2], [0, 1, 2], about_reply, role_boost=0.0)[0] == 0
    assert ranked(session, ids, [0, 1, 2], [0, 1, 2], about_reply, role_boost=0.5)[0] == 1
    # A question about nobody, or the step off: the retrievers' order.
    for query, boost in (("Which plants are easy to keep?", 0.5), (question, 0.0)):
        assert ranked(session, ids, *lists, query, role_boost=boost)[:2] == [1, 0]
    # Read ahead on the keyword thread, the roles come with the shapes: the same ranking.
    settings = SearchSettings(role_boost=0.5)
    keyword_ids = [ids[n] for n in lists[1]]
    ahead = read_ahead(session, keyword_ids, query=question, settings=settings)
    assert {ahead.shape[ids[n]].role for n in range(4)} == {"user", "assistant", None}
    dense_ids = [ids[n] for n in lists[0]]
    without = ranking_of(session, dense_ids, keyword_ids, question, settings, None)
    assert ranking_of(session, dense_ids, keyword_ids, question, settings, ahead) == without


def test_the_coverage_step_ranks_the_candidate_holding_more_of_the_query_first(session_with_turns) -> None:  # type: ignore[no-untyped-def]
    session, ids = session_with_turns
    # "Which greyhound from the shelter sleeps all day?": Ann's adoption turn (shelter) leads
    # both lists; the turn that names the greyhound, the shelter and the sleeping follows.
    query = "Which greyhound from the shelter sleeps all day?"
    off = {"coverage_share": 0.0, "length_prior": 0.0, "speaker_boost": 0.0}
    assert ranked(session, ids, [0, 2], [0, 2], query, **off)[:2] == [0, 2]
    assert ranked(session, ids, [0, 2], [0, 2], query, **(off | {"coverage_share": 0.5}))[:2] == [2, 0]


def ranked(
    session, ids: list[str], dense: list[int], keyword: list[int], query: str, **settings: float
) -> list[int]:  # type: ignore[no-untyped-def]
    order = rank(
        session,
        Candidates([ids[n] for n in dense], [ids[n] for n in keyword]),
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
    off = {
        "answer_share": 0.0,
        "length_prior": 0.0,
        "when_boost": 0.0,
        "speaker_boost": 0.0,
        "coverage_share": 0.0,
    }
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
    off = {"speaker_boost": 0.0, "length_prior": 0.0, "coverage_share": 0.0}
    assert ranked(session, ids, [2, 3], [2, 3], query, **off)[:2] == [2, 3]
    assert ranked(session, ids, [2, 3], [2, 3], query, **(off | {"speaker_boost": 0.5}))[:2] == [3, 2]
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
        Candidates(dense, keyword, ahead),
        query=query,
        named=[],
        candidates=20,
        settings=settings,
        clock=datetime.now,
    )


@pytest.mark.parametrize(("when_boost", "coverage_share"), [(0.0, 0.0), (0.3, 0.0), (0.0, 0.5)])
def test_reading_ahead_the_keyword_candidates_ranks_exactly_as_reading_after(  # type: ignore[no-untyped-def]
    session_with_turns, when_boost: float, coverage_share: float
) -> None:
    # The search reads the keyword half's candidates' neighbours and shapes on that half's
    # thread (search/retrieval.py); the ranking then reads only the other candidates'.
    session, ids = session_with_turns
    settings = SearchSettings(when_boost=when_boost, coverage_share=coverage_share)
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
        # Full texts for the when prior, or for the coverage step (every query here has two
        # words or more for it).
        assert ahead.full == (coverage_share > 0 or (when_boost > 0 and query.startswith("When")))
        without = ranking_of(session, dense_ids, keyword_ids, query, settings, None)
        assert ranking_of(session, dense_ids, keyword_ids, query, settings, ahead) == without
    # Settings that read no shapes: the neighbours only are read ahead, and the ranking is the same.
    plain = SearchSettings(
        length_prior=0.0, when_boost=0.0, speaker_boost=0.0, role_boost=0.0, answer_share=0.0
    )
    ahead = read_ahead(session, [ids[1]], query="dog", settings=plain)
    assert (
        ahead.asked == {ids[1]} and not ahead.shaped and ahead.nearby.neighbours[ids[1]] == [ids[0], ids[2]]
    )
    without = ranking_of(session, [ids[2]], [ids[1]], "dog", plain, None)
    assert ranking_of(session, [ids[2]], [ids[1]], "dog", plain, ahead) == without


@pytest.mark.parametrize("session_with_turns", ["sqlite"], indirect=True)  # SQLite's trace of statements
def test_the_coverage_step_reads_no_texts_beyond_the_shapes_read_for_the_priors(  # type: ignore[no-untyped-def]
    session_with_turns,
) -> None:
    # The shapes the priors read carry full texts when the coverage step will run, so the step
    # reads nothing of its own: one read of shapes in the ranking (the candidates not read
    # ahead), where a second read of the first candidates' texts cost every search ~0.2 ms.
    session, ids = session_with_turns
    raw = session.connection().connection.driver_connection
    settings = SearchSettings()
    query = "What breed is Ann's dog?"
    dense, keyword = [ids[3], ids[2]], [ids[1]]
    ahead = read_ahead(session, keyword, query=query, settings=settings)
    assert ahead.full
    statements: list[str] = []
    raw.set_trace_callback(statements.append)
    try:
        ranked = ranking_of(session, dense, keyword, query, settings, ahead)
    finally:
        raw.set_trace_callback(None)
    shape_reads = [sql for sql in statements if "length(m.content)" in sql]
    assert len(shape_reads) == 1, shape_reads
    assert ranked == ranking_of(session, dense, keyword, query, settings, None)


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("Where does Priya work?", True),
        ("How often do I attend yoga classes?", True),
        ("How many cats do I have?", True),
        ("How long have I had my cat, Luna?", True),
        ("Where am I planning to stay for my birthday trip?", True),
        ("What is my current personal best for the 5K?", True),  # said, whatever the tense
        ("Where did Priya work?", False),
        ("What was my previous personal best time?", False),
        ("What car did Leo use to drive?", False),
        ("Where do I initially keep my old sneakers?", False),
        ("Which school did Leo teach at before?", False),
        ("What is the first book Ann read?", False),
        ("Would Caroline pursue writing as a career?", False),
        ("Tell me about the lighthouse", False),
    ],
)
def test_a_question_in_the_present_tense_asks_how_things_stand(query: str, expected: bool) -> None:
    assert asks_about_present(query) is expected
    # Without the tense, only the words that say so ("current", "now", "so far").
    assert asks_about_present(query, tense=False) is ("current" in query)


UPDATE = [
    {"content": "Ann: I work at the bank on Main Street, in the loans team.", "captured_at": START},
    {
        "content": "Ann: I left the bank; I work at the bakery on Elm Street.",
        "captured_at": START + timedelta(days=90),
    },
]


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def session_with_update(request: pytest.FixtureRequest, tmp_path: Path):  # type: ignore[no-untyped-def]
    yield from _session_with(request, tmp_path, UPDATE)


def test_a_question_in_the_present_tense_ranks_the_newer_of_two_statements_first(session_with_update) -> None:  # type: ignore[no-untyped-def]
    session, ids = session_with_update
    # Both retrievers put the older statement first, the newer close behind it.
    off = {"coverage_share": 0.0, "length_prior": 0.0, "speaker_boost": 0.0}
    tense = off | {"present_tense": True}
    assert ranked(session, ids, [0, 1], [0, 1], "Where does Ann work?", **tense)[:2] == [1, 0]
    assert ranked(session, ids, [0, 1], [0, 1], "Where does Ann work?", **off)[:2] == [0, 1]  # the default
    assert ranked(session, ids, [0, 1], [0, 1], "Where does Ann work now?", **off)[:2] == [1, 0]  # said
    # Asked about the old state, the retrievers' order stands.
    assert ranked(session, ids, [0, 1], [0, 1], "Where did Ann work before?", **tense)[:2] == [0, 1]


#: A user's request that states a preference, the assistant's reply to it, and another session's
#: user turn: the preference is the user's own turn, though it asks a question.
PREFERENCE = [
    {
        "content": "Can you suggest a hotel in Miami? I like rooftop pools and a hot tub on the balcony.",
        "metadata_": {"role": "user"},
        "conversation_id": "s1",
        "captured_at": START,
    },
    {
        "content": "Sure! Here are hotels in Miami with rooftop pools: the Grand, the Palm, the Seaview, "
        "each with balcony hot tubs in some rooms and views over the bay.",
        "metadata_": {"role": "assistant"},
        "conversation_id": "s1",
        "captured_at": START + timedelta(seconds=1),
    },
    {
        "content": "I booked the hotel near the airport for my flight on Monday.",
        "metadata_": {"role": "user"},
        "conversation_id": "s2",
        "captured_at": START + timedelta(days=3),
    },
]


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def session_with_preference(request: pytest.FixtureRequest, tmp_path: Path):  # type: ignore[no-untyped-def]
    yield from _session_with(request, tmp_path, PREFERENCE)


def test_a_question_about_the_user_passes_no_answer_share_from_the_user_s_own_request(  # type: ignore[no-untyped-def]
    session_with_preference,
) -> None:
    session, ids = session_with_preference
    query = "What kind of hotel would I like?"
    off = {"coverage_share": 0.0, "length_prior": 0.0, "speaker_boost": 0.0}
    # The reply leads both lists; the user's request follows it; the other session's turn is
    # third. The request holds the preference: its question mark does not pass half its score
    # to the reply, whose role the question does not ask about.
    order = ranked(session, ids, [1, 0, 2], [1, 0, 2], query, **off)
    scores = dict(rank_scores(session, ids, [1, 0, 2], [1, 0, 2], query, **off))
    without = dict(rank_scores(session, ids, [1, 0, 2], [1, 0, 2], "What kind of hotel is best?", **off))
    assert order[0] == 0
    # A question about nobody keeps the answer share: the reply gains half the request's score.
    assert without[ids[1]] > scores[ids[1]] * 1.5


def rank_scores(
    session, ids: list[str], dense: list[int], keyword: list[int], query: str, **settings: float
) -> list[tuple[str, float]]:  # type: ignore[no-untyped-def]
    return rank(
        session,
        Candidates([ids[n] for n in dense], [ids[n] for n in keyword]),
        query=query,
        named=[],
        candidates=20,
        settings=SearchSettings(**settings),
        clock=datetime.now,
    )
