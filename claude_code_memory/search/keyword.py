"""Keyword relevance (BM25-style) from the metadata database, and rank fusion.

    terms(query)                      the words worth matching (pure)
    informative(freqs, corpus)        drop the terms too common to rank by (pure)
    KeywordIndex(database).search()   ranked memory ids for a user, from SQLite FTS5 (bm25) or
                                      PostgreSQL full text (ts_rank_cd), filtered in SQL
    fuse(rankings, k)                 reciprocal-rank fusion of several rankings (pure)

Dense vectors find paraphrases; keywords find names, numbers and rare words the embedding
blurs. Fusing ranks rather than scores needs no calibration between the two.
"""

from __future__ import annotations

import json
import re
import sqlite3
import uuid
from collections.abc import Collection, Sequence
from datetime import datetime

from sqlalchemy import Connection, DateTime, bindparam, text

from ..db.database import Database
from ..store.values import hex_id

_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9'_-]*")
_STOPWORD_TEXT = """a about after all also am an and any are as at be been before being but by can could
    did do does
    doing for from had has have having he her here hers him his how i if in into is it its just me my
    no not of on or our ours she so some than that the their them then there these they this those to
    too up us very was we were what when where which while who whom why will with would you your yours
    did does ever"""
STOPWORDS = frozenset(_STOPWORD_TEXT.split())
#: Reciprocal-rank fusion constant (``search.rrf_k`` sets the one searches use). 60 (the
#: paper's) rewards a memory both retrievers rank low over one that a single retriever ranks
#: first, so results got worse the deeper each list went; 10 held LoCoMo recall_any@10 within
#: 0.736-0.749 for 20 to 100 candidates a list, and with the priors after fusion
#: (search/priors.py) 4-7 did better than 10 (docs/search.md).
RRF_K = 6
#: A term in more than this share of the memories is too common to rank by: its BM25 weight is
#: near zero, yet ranking its matches is what a keyword query spends its time on (docs/search.md,
#: "How results are ranked", step 2, and "Measurements behind the code's choices").
COMMON_TERM_SHARE = 0.1
#: Below this many memories every term is kept: ranking all matches is cheap there.
PRUNE_FROM = 2000
#: Most matching memories one keyword query ranks: the rarest terms (the highest BM25 weights)
#: are kept while their matches add up to no more than this. Ranking costs grow with the
#: matches (bm25 plus the join that keeps the user's active rows); with twice this budget the
#: keyword half was a large share of a 10k search's time through REST (docs/search.md,
#: "Measurements behind the code's choices").
MATCH_BUDGET = 2000


def terms(query: str, limit: int = 24) -> list[str]:
    """Lower-cased words of the query without stopwords, de-duplicated, in order."""
    seen: dict[str, None] = {}
    for word in _WORD.findall(query.lower()):
        word = word.strip("'-_")
        if len(word) > 1 and word not in STOPWORDS:
            seen.setdefault(word, None)
    return list(seen)[:limit]


def informative(
    frequencies: dict[str, int],
    corpus: int,
    *,
    prune_from: int = PRUNE_FROM,
    share: float = COMMON_TERM_SHARE,
    budget: int = MATCH_BUDGET,
) -> list[str]:
    """The terms worth ranking by, in query order: all of them in a small corpus; in a large
    one, those found in at most ``share`` of it, rarest first while their matches fit the
    ``budget`` (possibly none: then the words do not tell memories apart and the dense ranking
    alone decides)."""
    if corpus < prune_from:
        return list(frequencies)
    cap = corpus * share
    kept: set[str] = set()
    spent = 0
    for word, count in sorted(frequencies.items(), key=lambda pair: pair[1]):
        if count > cap or spent + count > budget:
            break
        kept.add(word)
        spent += count
    return [word for word in frequencies if word in kept]


def fuse(rankings: Sequence[Sequence[str]], k: int = RRF_K) -> list[tuple[str, float]]:
    """Reciprocal-rank fusion: each list adds 1/(k + rank) to its items; best first."""
    scores: dict[str, float] = {}
    for ranking in rankings:
        for rank, item in enumerate(ranking):
            scores[item] = scores.get(item, 0.0) + 1.0 / (k + rank + 1)
    return sorted(scores.items(), key=lambda pair: pair[1], reverse=True)


class KeywordIndex:
    def __init__(self, database: Database, *, prune_from: int = PRUNE_FROM) -> None:
        self.database = database
        self.prune_from = prune_from
        self.dialect = database.engine.dialect.name

    def search(
        self,
        user_pk: uuid.UUID,
        query: str,
        *,
        limit: int = 50,
        app_id: uuid.UUID | None = None,
        project: str | None = None,
        created_from: datetime | None = None,
        created_to: datetime | None = None,
        scope: str | None = None,
        exclude: Collection[str] = (),
    ) -> list[str]:
        """Ids of the user's active memories that match any query term, most relevant first,
        within the app, project and creation-time range when given. ``scope``: a project whose
        memories are kept with those of no project (a scoped search), the others left out.
        ``exclude``: ids of memories to leave out (those a session was already given)."""
        words = terms(query)
        if not words:
            return []
        params: dict[str, object] = {"user": user_pk, "limit": limit}
        clauses = []
        if app_id is not None:
            clauses.append("AND m.app_id = :app")
            params["app"] = app_id
        if project is not None:
            clauses.append("AND m.project = :project")
            params["project"] = project
        if scope is not None:
            clauses.append("AND (m.project = :scope OR m.project IS NULL)")
            params["scope"] = scope
        if exclude:
            if self.dialect == "sqlite":  # ids as SQLite stores them: 32 hex digits
                clauses.append("AND m.id NOT IN (SELECT value FROM json_each(:exclude))")
                # Canonical UUID strings (the pipeline's): parsing each as a UUID cost a long
                # session's hook more than the query.
                params["exclude"] = json.dumps([hex_id(i) for i in exclude])
            else:
                clauses.append("AND NOT (m.id = ANY(:exclude))")
                params["exclude"] = [uuid.UUID(i) for i in exclude]
        if created_from is not None:
            clauses.append("AND m.created_at >= :created_from")
            params["created_from"] = created_from
        if created_to is not None:
            clauses.append("AND m.created_at <= :created_to")
            params["created_to"] = created_to
        filters_sql = " ".join(clauses)
        with self.database.engine.connect() as connection:
            if self.dialect == "sqlite":
                return self._search_sqlite(connection, words, params, filters_sql)
            else:
                params["match"] = " | ".join(
                    re.sub(r"[^a-z0-9]", "", w) for w in words if re.sub(r"[^a-z0-9]", "", w)
                )
                if not params["match"]:
                    return []
                sql = (
                    "SELECT m.id FROM memories m, to_tsquery('english', :match) q "
                    "WHERE to_tsvector('english', m.content) @@ q AND m.user_id = :user "
                    f"AND m.state = 'active' {filters_sql} "
                    "ORDER BY ts_rank_cd(to_tsvector('english', m.content), q) DESC LIMIT :limit"
                )
            statement = text(sql)
            # Typed, so that each database gets datetimes in the form it stores them in.
            times = [
                bindparam(name, type_=DateTime()) for name in ("created_from", "created_to") if name in params
            ]
            if times:
                statement = statement.bindparams(*times)
            rows = connection.execute(statement, params).all()
        return [str(uuid.UUID(str(row[0]))) for row in rows]

    def _search_sqlite(
        self, connection: Connection, words: list[str], params: dict[str, object], filters_sql: str
    ) -> list[str]:
        # Straight to the driver: through SQLAlchemy the same statements cost every search
        # more, all of it holding the GIL that the dense retriever needs meanwhile
        # (docs/search.md, "Measurements behind the code's choices").
        raw = connection.connection.driver_connection
        assert isinstance(raw, sqlite3.Connection)
        words = self._informative_sqlite(raw, words)
        if not words:
            return []
        # The values in the form SQLAlchemy stores them: Uuid as 32 hex characters, DateTime
        # through the dialect's own formatter.
        values = {**params, "match": " OR ".join(_phrase(w) for w in words)}
        for name in ("user", "app"):
            value = values.get(name)
            if isinstance(value, uuid.UUID):
                values[name] = value.hex
        stamp = DateTime().dialect_impl(connection.dialect).bind_processor(connection.dialect)
        for name in ("created_from", "created_to"):
            if name in values and stamp is not None:
                values[name] = stamp(values[name])
        sql = (
            "SELECT m.id FROM memories_fts f JOIN memories m ON m.rowid = f.rowid "
            "WHERE memories_fts MATCH :match AND m.user_id = :user AND m.state = 'active' "
            f"{filters_sql} ORDER BY bm25(memories_fts) LIMIT :limit"
        )
        return [str(uuid.UUID(row[0])) for row in raw.execute(sql, values).fetchall()]

    def _informative_sqlite(self, raw: sqlite3.Connection, words: list[str]) -> list[str]:
        # max(rowid) is a B-tree lookup; it overcounts after deletes, which only keeps more terms.
        corpus = raw.execute("SELECT coalesce(max(rowid), 0) FROM memories").fetchone()[0]
        if corpus < self.prune_from:
            return words
        # Counting stops past what any kept term may have: the cap and the budget.
        cap = min(int(corpus * COMMON_TERM_SHARE), MATCH_BUDGET) + 1
        counted = "SELECT count(*) FROM (SELECT rowid FROM memories_fts WHERE memories_fts MATCH ? LIMIT ?)"
        frequencies = {word: raw.execute(counted, (_phrase(word), cap)).fetchone()[0] for word in words}
        return informative(frequencies, corpus, prune_from=self.prune_from)


def _phrase(word: str) -> str:
    return '"' + word.replace('"', "") + '"'
