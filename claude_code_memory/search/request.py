"""What a search asks for: one frozen value an edge builds once and every layer passes down.

    SearchRequest(user_id="alice", app_name="claude-code", query="the dog", limit=10)

The REST routes, the MCP tools, the hooks' recall, the teams' merged search and the benches
build one; :class:`.pipeline.Search` runs it and the teams' search
(``memories/teams/search.py``) runs it once for the user and once per team, changing only whose
memories it reads (:func:`dataclasses.replace`). A new option is one field here. The values are
checked where the search is planned (:func:`.planning.plan`), so an edge may build a request
from what its caller sent and let the search say what is wrong with it.
"""

from __future__ import annotations

import uuid
from collections.abc import Collection
from dataclasses import dataclass, field
from datetime import datetime


@dataclass(frozen=True)
class SearchRequest:
    #: Whose memories: the search reads this user's only.
    user_id: str
    #: The app the search reads through: a paused app is refused, and each hit is logged as
    #: read by it (a search creates no app: an app that does not exist logs nothing).
    app_name: str
    query: str
    #: Hits wanted, 1 to :data:`.planning.MAX_SEARCH_LIMIT`.
    limit: int = 10
    #: Only memories written through this app (its key).
    app_filter: uuid.UUID | None = None
    #: How the access log names the read ("search", the hooks' own kinds).
    access_type: str = "search"
    #: Neighbouring memories of the same conversation brought on each side of every hit (0 to
    #: :data:`.planning.MAX_CONTEXT`): :attr:`.shaping.Hit.before`, :attr:`.shaping.Hit.after`.
    context: int = 0
    #: Only this project's memories (a filter inside both retrievers).
    project: str | None = None
    #: Only memories created in this range (naive UTC, inclusive; inside both retrievers).
    created_from: datetime | None = None
    created_to: datetime | None = None
    #: False leaves :attr:`.shaping.Hit.categories` empty: one query less, for callers that
    #: do not show them.
    with_categories: bool = True
    #: The searcher's project: with ``search.scope_ranking`` on, only its memories and global
    #: ones are returned, its own ranked up (:func:`.ranking.in_scope`).
    current_project: str | None = None
    #: Only one task's memories (of ``project`` or ``current_project``).
    task: str | None = None
    #: Only memories of no project.
    global_only: bool = False
    #: Only the memories of the user's teams (the ``team`` scope): the teams' search reads it;
    #: the pipeline, which searches one owner's memories, finds none of the user's own.
    teams_only: bool = False
    #: The keys of the user and of the app named ``app_name``, when the caller has looked them
    #: up already (and refused a paused app): the search does not look them up again.
    reader: tuple[uuid.UUID, uuid.UUID] | None = None
    #: When the search is asked (as-of): relative dates in the query resolve against it and
    #: the boosts read it as the present. None: relative dates resolve against the newest
    #: memory in scope (never later than the service's clock).
    now: datetime | None = None
    #: Ids of memories to leave out (those the hooks gave the session already).
    exclude: Collection[str] = field(default_factory=frozenset)

    def __post_init__(self) -> None:
        # A frozen request holds no set its caller may change afterwards.
        object.__setattr__(self, "exclude", frozenset(self.exclude))
