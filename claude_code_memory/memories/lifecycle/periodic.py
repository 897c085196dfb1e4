"""A job the server runs in a worker thread every interval: the retention sweep
(:class:`~.retention.Sweeper`) and the hygiene run (:class:`~..hygiene.proposals.HygieneScheduler`).

The first run comes ``first_delay_seconds`` after start-up; the owner's ``next_run_at`` says when
the next one is due. A failed run is logged and the loop goes on; leaving :meth:`running` cancels
the loop, waiting for a run in progress to finish (a worker thread cannot be interrupted) so the
stores are never closed under it. An interval of 0 or less runs nothing.

Under a lease (:meth:`Periodic.under_lease`, what the server does), replicas of the server share
one schedule: a tick runs the job only when this replica holds the job's lease (``job_leases``,
store/leases.py) and no replica ran it in the last interval; the lease is renewed while the job
runs, and another replica takes it over once its holder stops renewing (it died). ``runs`` and
``skipped`` count this replica's ticks (``/health`` shows them).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable
from datetime import datetime, timedelta
from typing import Any, Protocol, Self

import anyio

from ...db.models import utcnow
from ...store.leases import Leases

log = logging.getLogger(__name__)


class Scheduled(Protocol):
    next_run_at: datetime | None


class Periodic:
    def __init__(
        self,
        owner: Scheduled,
        job: Callable[[], Any],
        *,
        interval_seconds: float,
        first_delay_seconds: float,
        name: str,
    ) -> None:
        self.owner = owner
        self.job = job
        self.interval_seconds = interval_seconds
        self.first_delay_seconds = first_delay_seconds
        #: What the logs and the task call it ("retention sweep", "hygiene run"), and its lease.
        self.name = name
        self.leases: Leases | None = None
        self.lease_ttl = timedelta(seconds=60)
        self.runs = 0
        self.skipped = 0

    def under_lease(self, leases: Leases, ttl_seconds: float) -> Self:
        self.leases = leases
        self.lease_ttl = timedelta(seconds=ttl_seconds)
        return self

    def status(self) -> dict[str, Any]:
        holding = self.leases is not None and self.leases.holder(self.name) == self.leases.holder_id
        return {"runs": self.runs, "skipped": self.skipped, "holds_lease": holding}

    async def tick(self) -> bool:
        """One scheduled run, if this replica is to run it; answers whether it ran."""
        leases = self.leases
        if leases is None:
            await anyio.to_thread.run_sync(self.job)
            self.runs += 1
            return True
        # Spaced by 90% of the interval: the replicas' timers drift against each other.
        every = timedelta(seconds=self.interval_seconds * 0.9)
        if not await anyio.to_thread.run_sync(leases.acquire, self.name, self.lease_ttl) or not (
            await anyio.to_thread.run_sync(leases.due, self.name, every)
        ):
            self.skipped += 1
            return False
        async with renewing(leases, self.name, self.lease_ttl):
            await anyio.to_thread.run_sync(self.job)
        await anyio.to_thread.run_sync(leases.ran, self.name)
        self.runs += 1
        return True

    async def loop(self) -> None:
        delay = self.first_delay_seconds
        while True:
            self.owner.next_run_at = utcnow() + timedelta(seconds=delay)
            await asyncio.sleep(delay)
            try:
                await self.tick()
            except Exception:
                log.exception("%s failed; the next one runs in %g s", self.name, self.interval_seconds)
            delay = self.interval_seconds

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[Self]:
        if self.interval_seconds <= 0:
            yield self
            return
        task = asyncio.create_task(self.loop(), name=self.name)
        try:
            yield self
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            self.owner.next_run_at = None
            if self.leases is not None:  # stopping: another replica takes the job over now
                with contextlib.suppress(Exception):
                    await anyio.to_thread.run_sync(self.leases.release, self.name)


@contextlib.asynccontextmanager
async def renewing(leases: Leases, name: str, ttl: timedelta) -> AsyncIterator[None]:
    """Keep ``name``'s lease while the body runs: renewed every third of its time to live."""

    async def renew() -> None:
        while True:
            await asyncio.sleep(ttl.total_seconds() / 3)
            with contextlib.suppress(Exception):  # a missed renewal is retried; the job goes on
                await anyio.to_thread.run_sync(leases.acquire, name, ttl)

    task = asyncio.create_task(renew(), name=f"{name} lease")
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
