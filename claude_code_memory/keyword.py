"""Keyword relevance (BM25-style) from the metadata database, and rank fusion.

    terms(query)                      the words worth matching (pure)
    KeywordIndex(database).search()   ranked memory ids for a user, from SQLite FTS5 (bm25) or
                                      PostgreSQL full text (ts_rank_cd), filtered in SQL
    fuse(rankings, k)                 reciprocal-rank fusion of several rankings (pure)

Dense vectors find paraphrases; keywords find names, numbers and rare words the embedding
blurs. Fusing ranks rather than scores needs no calibration between the two.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Sequence

from sqlalchemy import text

from .db.database import Database

_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9'_-]*")
_STOPWORD_TEXT = """a about after all also am an and any are as at be been before being but by can could
    did do does
    doing for from had has have having he her here hers him his how i if in into is it its just me my
    no not of on or our ours she so some than that the their them then there these they this those to
    too up us very was we were what when where which while who whom why will with would you your yours
    did does ever"""
STOPWORDS = frozenset(_STOPWORD_TEXT.split())
RRF_K = 60


def terms(query: str, limit: int = 24) -> list[str]:
    """Lower-cased words of the query without stopwords, de-duplicated, in order."""
    seen: dict[str, None] = {}
    for word in _WORD.findall(query.lower()):
        word = word.strip("'-_")
        if len(word) > 1 and word not in STOPWORDS:
            seen.setdefault(word, None)
    return list(seen)[:limit]


def fuse(rankings: Sequence[Sequence[str]], k: int = RRF_K) -> list[tuple[str, float]]:
    """Reciprocal-rank fusion: each list adds 1/(k + rank) to its items; best first."""
    scores: dict[str, float] = {}
    for ranking in rankings:
        for rank, item in enumerate(ranking):
            scores[item] = scores.get(item, 0.0) + 1.0 / (k + rank + 1)
    return sorted(scores.items(), key=lambda pair: pair[1], reverse=True)


class KeywordIndex:
    def __init__(self, database: Database) -> None:
        self.database = database
        self.dialect = database.engine.dialect.name

    def search(
        self, user_pk: uuid.UUID, query: str, *, limit: int = 50, app_id: uuid.UUID | None = None
    ) -> list[str]:
        """Ids of the user's active memories that match any query term, most relevant first."""
        words = terms(query)
        if not words:
            return []
        params: dict[str, object] = {"user": user_pk, "limit": limit}
        app_clause = ""
        if app_id is not None:
            app_clause = "AND m.app_id = :app"
            params["app"] = app_id
        if self.dialect == "sqlite":
            params["match"] = " OR ".join('"' + w.replace('"', "") + '"' for w in words)
            params["user"] = user_pk.hex  # SQLAlchemy stores Uuid as 32 hex characters on SQLite
            params["app"] = app_id.hex if app_id else None
            sql = (
                "SELECT m.id FROM memories_fts f JOIN memories m ON m.rowid = f.rowid "
                "WHERE memories_fts MATCH :match AND m.user_id = :user AND m.state = 'active' "
                f"{app_clause} ORDER BY bm25(memories_fts) LIMIT :limit"
            )
        else:
            params["match"] = " | ".join(
                re.sub(r"[^a-z0-9]", "", w) for w in words if re.sub(r"[^a-z0-9]", "", w)
            )
            if not params["match"]:
                return []
            sql = (
                "SELECT m.id FROM memories m, to_tsquery('english', :match) q "
                "WHERE to_tsvector('english', m.content) @@ q AND m.user_id = :user AND m.state = 'active' "
                f"{app_clause} ORDER BY ts_rank_cd(to_tsvector('english', m.content), q) DESC LIMIT :limit"
            )
        with self.database.engine.connect() as connection:
            rows = connection.execute(text(sql), params).all()
        return [str(uuid.UUID(str(row[0]))) for row in rows]
