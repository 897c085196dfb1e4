"""Connecting to the metadata database and bringing its schema up to date."""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy import Engine, create_engine, event, text
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker

from ..errors import ConfigError, Unavailable

MIGRATIONS = Path(__file__).parent / "migrations"
#: PostgreSQL advisory lock key held while migrating: replicas starting together take turns.
MIGRATION_LOCK = 0x63636D656D


def _sqlite_pragmas(dbapi_connection, _record) -> None:  # type: ignore[no-untyped-def]
    # WAL lets readers run beside the writer; NORMAL sync is durable across process
    # crashes (what we need) and several times faster than FULL for single-row commits.
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA busy_timeout=5000")
    # Deleted rows are overwritten with zeros, not only unlinked: a forgotten memory's text
    # must not stay readable in free pages (see memories/lifecycle/erasure.py for the WAL and FTS5).
    cursor.execute("PRAGMA secure_delete=ON")
    cursor.close()


def connect(url: str) -> Engine:
    if url.startswith("sqlite"):
        engine = create_engine(url, connect_args={"check_same_thread": False}, pool_size=8)
        event.listen(engine, "connect", _sqlite_pragmas)
    else:
        engine = create_engine(url, pool_pre_ping=True, pool_size=8, max_overflow=8)
    return engine


def head_revision() -> str:
    """The newest migration's revision id. Files are named ``NNNN_what.py`` with revision
    ``NNNN`` and each revises the one before (tests/test_engine.py checks this against
    Alembic's own idea of the head)."""
    return max(path.name.split("_", 1)[0] for path in (MIGRATIONS / "versions").glob("[0-9]*_*.py"))


def current_revision(engine: Engine) -> str | None:
    try:
        with engine.connect() as connection:
            return connection.execute(text("SELECT version_num FROM alembic_version")).scalar()
    except SQLAlchemyError:
        return None  # a new database: no alembic_version table yet


def migrate(engine: Engine) -> None:
    """Apply every pending migration (idempotent). A database already at the head is only
    read: Alembic, slow to import (docs/search.md, "Measurements behind the code's choices"),
    is loaded when there is work to do."""
    if current_revision(engine) == head_revision():
        return
    from alembic import command
    from alembic.config import Config as AlembicConfig

    config = AlembicConfig()
    config.set_main_option("script_location", str(MIGRATIONS))
    try:
        with engine.begin() as connection:
            if connection.dialect.name == "postgresql":
                # Several replicas start at once: one migrates, the others wait here, then
                # find nothing left to do (the lock ends with the transaction).
                connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": MIGRATION_LOCK})
            config.attributes["connection"] = connection
            command.upgrade(config, "head")
    except SQLAlchemyError as exc:
        raise ConfigError(f"storage.database_url: cannot open or migrate the database: {exc}") from exc


def check(engine: Engine) -> None:
    try:
        with engine.connect() as connection:
            connection.execute(text("SELECT 1"))
    except SQLAlchemyError as exc:
        raise Unavailable(f"database unavailable: {exc.__class__.__name__}") from exc


def lock_key(name: str) -> int:
    """A PostgreSQL advisory lock key (signed 64 bits) for a lock's name."""
    return int.from_bytes(hashlib.blake2b(name.encode(), digest_size=8).digest(), "big", signed=True)


class Database:
    def __init__(self, url: str) -> None:
        self.url = url
        self.engine = connect(url)
        self._sessions = sessionmaker(self.engine, expire_on_commit=False)
        self._named: dict[str, threading.Lock] = {}
        self._named_guard = threading.Lock()

    @contextmanager
    def exclusive(self, name: str) -> Iterator[None]:
        """One holder at a time of the lock named ``name``: among this process's threads, and on
        PostgreSQL among every replica too (a session advisory lock, held on its own connection
        until the block ends). For a check and the writes it allows (a team's quota)."""
        with self._named_guard:
            local = self._named.setdefault(name, threading.Lock())
        with local:
            if self.engine.dialect.name != "postgresql":
                yield
                return
            with self.engine.connect() as connection:
                key = {"key": lock_key(name)}
                connection.execute(text("SELECT pg_advisory_lock(:key)"), key)
                connection.commit()
                try:
                    yield
                finally:
                    connection.execute(text("SELECT pg_advisory_unlock(:key)"), key)
                    connection.commit()

    def migrate(self) -> None:
        migrate(self.engine)

    def check(self) -> None:
        check(self.engine)

    @contextmanager
    def session(self) -> Iterator[Session]:
        session = self._sessions()
        try:
            yield session
            session.commit()
        except BaseException:
            session.rollback()
            raise
        finally:
            session.close()

    def close(self) -> None:
        self.engine.dispose()
