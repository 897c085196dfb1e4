"""Retrieval and ranking: a query to ranked hits (docs/search.md).

- ``pipeline.py``: the run of one search: the dense half (the query's embedding, then the
  vector store) and the keyword half beside it, then the ranking, the rows and the access log.
- ``keyword.py``: SQLite FTS5 and PostgreSQL full text.
- ``ranking.py``: fusion and every step after it (conversation shares, dates, priors, boosts);
  ``priors.py`` (length, speakers, roles, coverage), ``boosts.py``, ``conversation.py`` (a
  turn's neighbours), ``dates.py``, ``relative_dates.py`` (relative times, pure) and
  ``temporal.py`` (those made concrete against the store).

It reads ``store/`` and ``db/``, never ``memories/``.
"""
