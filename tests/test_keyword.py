"""Keyword half of hybrid search: query terms, pruning of common terms, fusion, the index."""

from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pytest
from sqlalchemy.orm import Session

from claude_code_memory.db.database import Database
from claude_code_memory.db.models import App, Memory, User
from claude_code_memory.search.keyword import RRF_K, KeywordIndex, fuse, informative, terms


def test_terms_drop_stopwords_and_duplicates() -> None:
    assert terms("When did Caroline go to the LGBTQ support group? Caroline!") == [
        "caroline", "go", "lgbtq", "support", "group",
    ]  # fmt: skip
    assert terms("the of and") == []
    assert terms('zq-gw-7731 "quoted"') == ["zq-gw-7731", "quoted"]


def test_fuse_rewards_agreement_and_keeps_singletons() -> None:
    fused = dict(fuse([["a", "b", "c"], ["c", "a", "d"]]))
    assert list(fused)[:2] == ["a", "c"]  # in both lists, near the top
    assert fused["a"] == 1 / (RRF_K + 1) + 1 / (RRF_K + 2)
    assert set(fused) == {"a", "b", "c", "d"}
    assert fuse([]) == []


def test_informative_keeps_everything_in_a_small_corpus() -> None:
    assert informative({"note": 90, "norway": 1}, corpus=100, prune_from=1000) == ["note", "norway"]


def test_informative_drops_terms_too_common_to_rank_by() -> None:
    freqs = {"note": 9000, "every": 1200, "norway": 40, "pytest": 1000}
    assert informative(freqs, corpus=10_000, prune_from=2000, share=0.1) == ["norway", "pytest"]
    assert informative({"note": 9000}, corpus=10_000) == []  # nothing tells memories apart


def test_informative_keeps_the_rarest_terms_within_the_match_budget() -> None:
    freqs = {"neovim": 3000, "lsp": 2500, "zq-17": 3, "march": 900}
    kept = informative(freqs, corpus=100_000, prune_from=2000, share=0.1, budget=4000)
    assert informative(freqs, corpus=100_000, budget=2000) == ["zq-17", "march"]
    assert kept == ["lsp", "zq-17", "march"]  # query order; 3 + 900 + 2500 fits, + 3000 does not
    assert informative({"neovim": 5000}, corpus=100_000, budget=4000) == []


@pytest.fixture
def database(tmp_path: Path) -> Iterator[Database]:
    opened = Database(f"sqlite:///{tmp_path / 'memory.db'}")
    opened.migrate()
    yield opened
    opened.close()


def alice(session: Session) -> User:
    user = User(user_id="alice")
    session.add(user)
    session.flush()
    return user


def alice_with_app(session: Session, name: str) -> tuple[User, App]:
    user = alice(session)
    app = App(owner_id=user.id, name=name)
    session.add(app)
    session.flush()
    return user, app


def test_keyword_index_ranks_by_the_rare_term_on_a_real_database(database: Database) -> None:
    with database.session() as session:
        user, app = alice_with_app(session, "t")
        texts = [f"a daily note about the weather, item {i}" for i in range(40)]
        texts.append("a daily note about a hiking trip to Norway")
        session.add_all([Memory(user_id=user.id, app_id=app.id, content=t) for t in texts])
        session.flush()
        norway = session.query(Memory).filter(Memory.content.contains("Norway")).one().id
        user_pk = user.id
    pruning = KeywordIndex(database, prune_from=10)
    # "daily" and "note" are in every memory: only "norway" ranks, so it is the one hit.
    assert pruning.search(user_pk, "daily note Norway") == [str(norway)]
    assert pruning.search(user_pk, "daily note") == []
    # Without pruning every memory matches and the rare term still ranks first.
    keeping = KeywordIndex(database, prune_from=10_000)
    everything = keeping.search(user_pk, "daily note Norway", limit=100)
    assert everything[0] == str(norway) and len(everything) == 41


def test_keyword_filters_by_app_project_and_creation_time_in_sql(database: Database) -> None:
    with database.session() as session:
        user = alice(session)
        chat, cli = App(owner_id=user.id, name="chat"), App(owner_id=user.id, name="cli")
        session.add_all([chat, cli])
        session.flush()
        rows = {
            "june": Memory(
                user_id=user.id,
                app_id=chat.id,
                content="zq deploy notes",
                project="/web",
                created_at=datetime(2026, 6, 1, 12, 0, 0),
            ),
            "july": Memory(
                user_id=user.id,
                app_id=cli.id,
                content="zq deploy notes again",
                project="/api",
                created_at=datetime(2026, 7, 1, 12, 0, 0, 250),
            ),
        }
        session.add_all(rows.values())
        session.flush()
        ids = {name: str(memory.id) for name, memory in rows.items()}
        user_pk, cli_pk = user.id, cli.id
    index = KeywordIndex(database)
    assert set(index.search(user_pk, "zq deploy")) == set(ids.values())
    assert index.search(user_pk, "zq deploy", app_id=cli_pk) == [ids["july"]]
    assert index.search(user_pk, "zq deploy", project="/web") == [ids["june"]]
    # Bounds compare with the stored timestamps, microseconds included.
    assert index.search(user_pk, "zq deploy", created_from=datetime(2026, 7, 1, 12, 0, 0, 250)) == [
        ids["july"]
    ]
    assert index.search(user_pk, "zq deploy", created_to=datetime(2026, 7, 1, 12, 0, 0, 249)) == [ids["june"]]
    assert index.search(user_pk, "zq deploy", created_from=datetime(2026, 8, 1)) == []


def scope_and_exclusion(database: Database) -> None:
    """A scope keeps the project's memories and those of no project; ``exclude`` leaves ids out."""
    with database.session() as session:
        user, app = alice_with_app(session, "chat")
        rows = {
            project or "global": Memory(
                user_id=user.id, app_id=app.id, content=f"zq deploy notes for {project}", project=project
            )
            for project in ("/web", "/api", None)
        }
        session.add_all(rows.values())
        session.flush()
        ids = {name: str(memory.id) for name, memory in rows.items()}
        user_pk = user.id
    index = KeywordIndex(database)
    assert set(index.search(user_pk, "zq deploy", scope="/web")) == {ids["/web"], ids["global"]}
    assert index.search(user_pk, "zq deploy", scope="/web", exclude=[ids["global"]]) == [ids["/web"]]
    assert set(index.search(user_pk, "zq deploy", exclude=[ids["/api"], ids["/web"]])) == {ids["global"]}
    assert index.search(user_pk, "zq deploy", exclude=list(ids.values())) == []


def test_keyword_scope_and_exclusion_in_sql_on_sqlite(database: Database) -> None:
    scope_and_exclusion(database)


def test_keyword_scope_and_exclusion_in_sql_on_postgresql(postgres_url: str) -> None:
    opened = Database(postgres_url)
    opened.migrate()
    try:
        scope_and_exclusion(opened)
    finally:
        opened.close()
