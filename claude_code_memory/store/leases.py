"""Which replica runs a background job: a lease per job in the metadata database (``job_leases``).

    Leases(database, holder).acquire(name, ttl) -> bool     taken (free, expired or ours), renewed
    Leases(...).due(name, every) -> bool                    no replica ran it in the last ``every``
    Leases(...).ran(name)                                   a run finished: noted, for ``due``
    Leases(...).release(name)                               let another replica take it now
    Leases(...).holder(name) -> str | None                  who holds it (None: nobody, or expired)

Taking a lease is one conditional ``UPDATE`` (``WHERE holder = me OR expires_at < now``), or
an ``INSERT`` for a job never run; two replicas racing for it cannot both win, on PostgreSQL
and SQLite alike. The holder renews while the job runs (:mod:`memories.lifecycle.periodic`);
a holder that dies stops renewing, and the lease is another replica's once it expires. Times
are the replicas' clocks (UTC): keep them in step (NTP) and ``ttl`` well above their skew.
"""

from __future__ import annotations

import os
import secrets
import socket
from datetime import datetime, timedelta

from sqlalchemy import or_, select, update
from sqlalchemy.exc import IntegrityError

from ..db.database import Database
from ..db.models import JobLease, utcnow


def holder_name() -> str:
    """This process, as the leases name it: host, pid and a random tail (a pid is reused)."""
    return f"{socket.gethostname()[:160]}:{os.getpid()}:{secrets.token_hex(4)}"


class Leases:
    def __init__(self, database: Database, holder: str | None = None) -> None:
        self.database = database
        self.holder_id = holder or holder_name()

    def acquire(self, name: str, ttl: timedelta) -> bool:
        now = utcnow()
        with self.database.session() as session:
            taken = session.execute(
                update(JobLease)
                .where(
                    JobLease.name == name,
                    or_(JobLease.holder == self.holder_id, JobLease.expires_at < now),
                )
                .values(holder=self.holder_id, expires_at=now + ttl)
            )
            if getattr(taken, "rowcount", 0):
                return True
        try:
            with self.database.session() as session:
                session.add(JobLease(name=name, holder=self.holder_id, expires_at=now + ttl, runs=0))
        except IntegrityError:
            return False  # another replica holds it (or took it first)
        return True

    def due(self, name: str, every: timedelta) -> bool:
        with self.database.session() as session:
            last: datetime | None = session.scalar(select(JobLease.last_run_at).where(JobLease.name == name))
        return last is None or utcnow() - last >= every

    def ran(self, name: str) -> None:
        with self.database.session() as session:
            session.execute(
                update(JobLease)
                .where(JobLease.name == name, JobLease.holder == self.holder_id)
                .values(last_run_at=utcnow(), runs=JobLease.runs + 1)
            )

    def release(self, name: str) -> None:
        with self.database.session() as session:
            session.execute(
                update(JobLease)
                .where(JobLease.name == name, JobLease.holder == self.holder_id)
                .values(expires_at=utcnow() - timedelta(seconds=1))
            )

    def holder(self, name: str) -> str | None:
        with self.database.session() as session:
            row = session.execute(
                select(JobLease.holder, JobLease.expires_at).where(JobLease.name == name)
            ).first()
        return row.holder if row is not None and row.expires_at > utcnow() else None
