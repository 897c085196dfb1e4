"""A job the server runs in a worker thread every interval: the retention sweep
(:class:`~.retention.Sweeper`) and the hygiene run (:class:`~..hygiene.proposals.HygieneScheduler`).

The first run comes ``first_delay_seconds`` after start-up; the owner's ``next_run_at`` says when
the next one is due. A failed run is logged and the loop goes on; leaving :meth:`running` cancels
the loop, waiting for a run in progress to finish (a worker thread cannot be interrupted) so the
stores are never closed under it. An interval of 0 or less runs nothing.
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
        #: What the logs and the task call it ("retention sweep", "hygiene run").
        self.name = name

    async def loop(self) -> None:
        delay = self.first_delay_seconds
        while True:
            self.owner.next_run_at = utcnow() + timedelta(seconds=delay)
            await asyncio.sleep(delay)
            try:
                await anyio.to_thread.run_sync(self.job)
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
