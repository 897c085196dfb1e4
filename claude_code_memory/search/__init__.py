"""Retrieval and ranking: a query to ranked hits (docs/search.md).

- ``request.py``: ``SearchRequest``, what a search asks: one frozen value the edges build.
- ``pipeline.py``: ``Search``, the run of one request, stage after stage: ``planning.py`` (the
  request checked; its filters, scope, date windows and depths), ``retrieval.py`` (the dense
  half, the query's embedding then the vector store, and the keyword half beside it),
  ``ranking.py``, then ``shaping.py`` (the ranked ids as hits from their rows, the access log).
- ``keyword.py``: SQLite FTS5 and PostgreSQL full text.
- ``ranking.py``: fusion and every step after it (conversation shares, dates, priors, boosts);
  ``priors.py`` (length, speakers, roles, coverage), ``boosts.py``, ``conversation.py`` (a
  turn's neighbours), ``dates.py``, ``relative_dates.py`` (relative times, pure) and
  ``temporal.py`` (those made concrete against the store).

It reads ``store/`` and ``db/``, never ``memories/``.
"""
