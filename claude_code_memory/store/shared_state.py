"""State every API replica must see alike, kept in the metadata database (``shared_state``).

    SharedState(database).put(scope, key, value, ttl=...)     a JSON value, until it expires
    SharedState(...).get(scope, key) -> value | None
    SharedState(...).take(scope, key) -> value | None          read and delete, atomically
    SharedState(...).keys(scope) -> [key, ...]                 the live keys of a scope
    SharedState(...).add_keys(scope, keys, ttl=...)            keys without values, idempotent
    SharedState(...).increment(scope, key, by, ttl=...) -> n   a counter, atomically
    SharedState(...).count(scope, key) -> n                    a live counter's value (0: none)
    SharedState(...).set_count(scope, key, n, ttl=...)         a counter set to n
    SharedState(...).add_to(scope, key, by) -> bool            added to a live counter, if any
    SharedState(...).counted(scope, key) -> n | None           a live counter's value (None: none)
    SharedState(...).drop(scope) / forget(scope, key) / prune()  rows gone

    SharedCounters(state)     rate-limit counters (rate_limits.limiter.CounterStore) every replica shares

A scope groups rows (one hook session, one MCP caller); a key is unique within it. Every call
is one short transaction, so two replicas answering the same client see each other's writes at
once. ``increment`` is one ``INSERT ... ON CONFLICT DO UPDATE`` (PostgreSQL and SQLite alike):
what a request counter needs, e.g. a fixed window per token (scope ``rate:<token id>``, key the
window's start, ``ttl`` the window). Times are the replicas' own clocks (UTC): keep them in step
(NTP); an expiry is never finer than that.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from datetime import timedelta
from typing import Any

from limits import RateLimitItem
from sqlalchemy import case, delete, or_, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import IntegrityError

from ..db.database import Database
from ..db.models import SharedValue, utcnow

#: Scope and key length (the columns' size).
MAX_NAME = 255


def _name(value: str) -> str:
    # Callers build names from ids a client chose (a hook's session id): cut, never refused.
    return value[:MAX_NAME]


class SharedState:
    def __init__(self, database: Database) -> None:
        self.database = database
        self._dialect = postgresql if database.engine.dialect.name == "postgresql" else sqlite

    def _live(self) -> Any:
        return or_(SharedValue.expires_at.is_(None), SharedValue.expires_at > utcnow())

    def _expiry(self, ttl: timedelta | None) -> Any:
        return None if ttl is None else utcnow() + ttl

    def put(self, scope: str, key: str, value: Any, *, ttl: timedelta | None = None) -> None:
        row = {
            "scope": _name(scope),
            "key": _name(key),
            "value": value,
            "count": 0,
            "expires_at": self._expiry(ttl),
            "updated_at": utcnow(),
        }
        statement = self._dialect.insert(SharedValue).values(**row)
        statement = statement.on_conflict_do_update(
            index_elements=["scope", "key"],
            set_={"value": value, "expires_at": row["expires_at"], "updated_at": row["updated_at"]},
        )
        with self.database.session() as session:
            session.execute(statement)

    def get(self, scope: str, key: str) -> Any:
        with self.database.session() as session:
            return session.scalar(
                select(SharedValue.value).where(
                    SharedValue.scope == _name(scope), SharedValue.key == _name(key), self._live()
                )
            )

    def exists(self, scope: str) -> bool:
        with self.database.session() as session:
            found = session.scalar(
                select(SharedValue.key).where(SharedValue.scope == _name(scope), self._live()).limit(1)
            )
        return found is not None

    def take(self, scope: str, key: str) -> Any:
        """The value, deleted in the same statement: of two replicas taking it at once, one gets
        it and the other None."""
        with self.database.session() as session:
            row = session.execute(
                delete(SharedValue)
                .where(SharedValue.scope == _name(scope), SharedValue.key == _name(key))
                .returning(SharedValue.value, SharedValue.expires_at)
            ).first()
        if row is None or (row.expires_at is not None and row.expires_at <= utcnow()):
            return None
        return row.value

    def keys(self, scope: str) -> list[str]:
        """The scope's live keys, oldest first."""
        with self.database.session() as session:
            return list(
                session.scalars(
                    select(SharedValue.key)
                    .where(SharedValue.scope == _name(scope), self._live())
                    .order_by(SharedValue.updated_at, SharedValue.key)
                )
            )

    def add_keys(self, scope: str, keys: Iterable[str], *, ttl: timedelta | None = None) -> None:
        """Each key in the scope (no value); a key already there gets the new expiry."""
        now, expires_at = utcnow(), self._expiry(ttl)
        rows = [
            {
                "scope": _name(scope),
                "key": _name(key),
                "count": 0,
                "expires_at": expires_at,
                "updated_at": now,
            }
            # Sorted: two writers of overlapping keys take their rows in one order (in their
            # own orders, each could wait for a row the other holds: a deadlock on PostgreSQL).
            for key in sorted(set(keys))
        ]
        if not rows:
            return
        statement = self._dialect.insert(SharedValue).values(rows)
        statement = statement.on_conflict_do_update(
            index_elements=["scope", "key"], set_={"expires_at": expires_at}
        )
        with self.database.session() as session:
            session.execute(statement)

    def touch(self, scope: str, *, ttl: timedelta) -> None:
        """Every row of the scope lives ``ttl`` from now."""
        with self.database.session() as session:
            session.execute(
                update(SharedValue)
                .where(SharedValue.scope == _name(scope))
                .values(expires_at=self._expiry(ttl))
            )

    def increment(self, scope: str, key: str, by: int = 1, *, ttl: timedelta | None = None) -> int:
        """The counter after adding ``by``; a new (or expired) counter starts from 0."""
        now, expires_at = utcnow(), self._expiry(ttl)
        statement = self._dialect.insert(SharedValue).values(
            scope=_name(scope), key=_name(key), count=by, expires_at=expires_at, updated_at=now
        )
        expired = SharedValue.expires_at.is_not(None) & (SharedValue.expires_at <= now)
        statement = statement.on_conflict_do_update(
            index_elements=["scope", "key"],
            set_={
                "count": case((expired, by), else_=SharedValue.count + by),
                "expires_at": case((expired, expires_at), else_=SharedValue.expires_at),
                "updated_at": now,
            },
        ).returning(SharedValue.count)
        for attempt in range(2):  # two first increments at once: one inserts, the other retries
            try:
                with self.database.session() as session:
                    return int(session.execute(statement).scalar_one())
            except IntegrityError:
                if attempt:
                    raise
        raise AssertionError("unreachable")

    def set_count(self, scope: str, key: str, value: int, *, ttl: timedelta | None = None) -> None:
        """The counter is ``value`` (made or replaced), until ``ttl`` from now."""
        now, expires_at = utcnow(), self._expiry(ttl)
        statement = self._dialect.insert(SharedValue).values(
            scope=_name(scope), key=_name(key), count=value, expires_at=expires_at, updated_at=now
        )
        statement = statement.on_conflict_do_update(
            index_elements=["scope", "key"],
            set_={"count": value, "expires_at": expires_at, "updated_at": now},
        )
        with self.database.session() as session:
            session.execute(statement)

    def add_to(self, scope: str, key: str, by: int) -> bool:
        """Add ``by`` to a live counter, atomically; False (nothing changed) when there is none."""
        with self.database.session() as session:
            result = session.execute(
                update(SharedValue)
                .where(SharedValue.scope == _name(scope), SharedValue.key == _name(key), self._live())
                .values(count=SharedValue.count + by, updated_at=utcnow())
            )
        return bool(getattr(result, "rowcount", 0))

    def counted(self, scope: str, key: str) -> int | None:
        """A live counter's value; None when there is none (unlike :meth:`count`)."""
        with self.database.session() as session:
            value = session.scalar(
                select(SharedValue.count).where(
                    SharedValue.scope == _name(scope), SharedValue.key == _name(key), self._live()
                )
            )
        return None if value is None else int(value)

    def count(self, scope: str, key: str) -> int:
        return self.counted(scope, key) or 0

    def forget(self, scope: str, key: str) -> None:
        with self.database.session() as session:
            session.execute(
                delete(SharedValue).where(SharedValue.scope == _name(scope), SharedValue.key == _name(key))
            )

    def drop(self, scope: str) -> None:
        with self.database.session() as session:
            session.execute(delete(SharedValue).where(SharedValue.scope == _name(scope)))

    def prune(self) -> int:
        """Delete expired rows; answers how many."""
        with self.database.session() as session:
            result = session.execute(
                delete(SharedValue).where(
                    SharedValue.expires_at.is_not(None), SharedValue.expires_at <= utcnow()
                )
            )
        return int(getattr(result, "rowcount", 0) or 0)


class SharedCounters:
    """Rate-limit counters in the shared database, so that replicas behind one load balancer
    count a token's and an address's requests together (``rate_limits.limiter.CounterStore``; one process
    keeps them in memory, ``rate_limits.limiter.MemoryCounters``). A fixed window per rate and key: one
    ``increment`` per event, the row expiring with its window (``prune`` deletes it). Unlike the
    in-memory sliding window, a client can send up to twice the rate across a window's edge."""

    SCOPE = "rate-limit"

    def __init__(self, state: SharedState) -> None:
        self.state = state

    @staticmethod
    def _window(rate: RateLimitItem, key: str) -> tuple[str, float, timedelta]:
        length, now = rate.get_expiry(), time.time()
        start = now - now % length
        return f"{rate}|{key}|{int(start)}", start + length - now, timedelta(seconds=length)

    def hit(self, rate: RateLimitItem, key: str) -> float | None:
        bucket, left, ttl = self._window(rate, key)
        if self.state.increment(self.SCOPE, bucket, ttl=ttl) <= rate.amount:
            return None
        self.state.increment(self.SCOPE, bucket, -1, ttl=ttl)  # a refused event is not counted
        return max(1.0, left)

    def wait(self, rate: RateLimitItem, key: str) -> float | None:
        bucket, left, _ = self._window(rate, key)
        return None if self.state.count(self.SCOPE, bucket) < rate.amount else max(1.0, left)

    def clear(self, rate: RateLimitItem, key: str) -> None:
        self.state.forget(self.SCOPE, self._window(rate, key)[0])
