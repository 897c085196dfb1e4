"""The states a memory moves through.

Its own module, with nothing but the standard library, because every layer names them: the
database models store them, the store and the search pipeline filter on them, and the edges
parse them from requests. Every module imports the enum from here, never through another
module, so an edge gets the states without the database layer.
"""

from __future__ import annotations

import enum


class MemoryState(enum.StrEnum):
    active = "active"
    paused = "paused"
    archived = "archived"
    deleted = "deleted"
    #: Captured, waiting for the owner's consent: stored, not embedded, not searchable.
    pending = "pending"
    #: Deleted with ``privacy.trash_days`` > 0: text and vector kept, restorable until purged.
    trashed = "trashed"
