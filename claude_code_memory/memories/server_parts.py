"""The API server's long-lived parts (metadata database, identity, engine, memory service, and
the jobs that run beside requests), which the composition root in ``api/app.py`` builds from
its settings.

The jobs are built here, once, from the service's parts: hygiene and its schedule, retention
and its sweeper, the reconciler, the pruning of expired shared state. (Reclaim is the service's
own: every delete schedules one; on PostgreSQL and a Qdrant server it has nothing to do.) Each
scheduled job of replicas runs under a lease (``job_leases``): one replica runs it at a time.

Replicas (``server.replicas`` > 1, docs/team.md): several API processes on one PostgreSQL and
one Qdrant server. What one process kept in its memory and the others must see moves to the
database (:class:`~..store.shared_state.SharedState`): the hooks' sessions, the MCP callers'
current project, and the quota's byte counts are counted afresh. The embedded stores cannot be
shared (Qdrant Edge and SQLite lock their files for one process): replicas without
``storage.database_url`` on PostgreSQL and ``storage.qdrant_url`` are refused.
The ``*_of`` functions build one job over a service for whoever holds a service without the
rest of the server (``ccmem doctor``, tests, benchmarks).
"""

from __future__ import annotations

import logging
from datetime import datetime

from ..auth.identity import Identity
from ..config import PrivacySettings, Settings
from ..db.database import Database
from ..engine import file_modes
from ..engine.factory import Engine
from ..errors import ConfigError
from ..store.leases import Leases
from ..store.shared_state import SharedState
from .hygiene.proposals import Hygiene, HygieneScheduler
from .lifecycle.periodic import Periodic
from .lifecycle.reconcile import Reconciler
from .lifecycle.retention import Retention, Sweeper
from .service import MemoryService


def hygiene_of(service: MemoryService) -> Hygiene:
    return Hygiene(
        service.database,
        service.settings.hygiene,
        owners=service.owners,
        vectors=service.vectors,
        writes=service.writes,
        states=service.states,
        access_log=service.access_log,
        capture_filter=service.capture_filter,
        clock=service.now,
    )


def retention_of(service: MemoryService, privacy: PrivacySettings | None = None) -> Retention:
    return Retention(
        service.database,
        privacy if privacy is not None else service.settings.privacy,
        owners=service.owners,
        vectors=service.vectors,
        usage=service.usage,
        access_log=service.access_log,
        erasure=service.erasure,
        clock=service.now,
        on_delete=service.profile.prune_users,
    )


def reconciler_of(service: MemoryService) -> Reconciler:
    return Reconciler(service.database, service.vectors, service.erasure)


#: How often expired shared state (store/shared_state.py) is deleted, and how often each replica
#: purges its own mem0 history of memories gone (memories/lifecycle/reconcile.py).
PRUNE_INTERVAL_SECONDS = 3600.0
LOCAL_HISTORY_FIRST_DELAY_SECONDS = 600.0


def require_shareable(settings: Settings) -> None:
    """A ConfigError unless ``server.replicas`` > 1 has stores that several processes can share."""
    replicas = settings.server.replicas
    if replicas <= 1:
        return
    if not settings.database_url.startswith(("postgresql", "postgres:")):
        raise ConfigError(
            f"server.replicas = {replicas} needs PostgreSQL: set DATABASE_URL (storage.database_url) "
            "to a postgresql:// URL (SQLite is one process's store)"
        )
    if not settings.storage.qdrant_url:
        raise ConfigError(
            f"server.replicas = {replicas} needs a Qdrant server: set QDRANT_URL (storage.qdrant_url); "
            "the embedded Qdrant Edge store is one process's (docs/team.md)"
        )


log = logging.getLogger(__name__)


class JobClock:
    """When a job of its own runs next (what :class:`Periodic` keeps on its owner)."""

    def __init__(self) -> None:
        self.next_run_at: datetime | None = None


class ServerParts:
    """Everything the server holds open, built in dependency order and closed in reverse."""

    def __init__(self, settings: Settings) -> None:
        require_shareable(settings)  # before anything opens
        file_modes.private_dir(settings.data_path)
        self.settings = settings
        self.database = Database(settings.database_url)
        self.database.migrate()
        self.identity = Identity(self.database, settings.server.admin_token)
        self.replicated = settings.server.replicas > 1
        self.shared = SharedState(self.database)
        self.leases = Leases(self.database)
        ttl = settings.server.lease_seconds
        self.engine = Engine.open(settings)
        self.service = MemoryService(
            self.database, self.engine, settings, shared=self.shared if self.replicated else None
        )
        self.reconciler = reconciler_of(self.service)
        if self.replicated:
            self.reconciler.shared(self.leases, ttl)
        self.hygiene = hygiene_of(self.service)
        self.hygiene_scheduler = HygieneScheduler(self.hygiene, settings.hygiene.schedule_hours)
        self.retention = retention_of(self.service)
        self.sweeper = Sweeper(self.retention, settings.privacy.purge_interval_minutes)
        self.pruner = Periodic(
            JobClock(),
            self.shared.prune,
            interval_seconds=PRUNE_INTERVAL_SECONDS,
            first_delay_seconds=PRUNE_INTERVAL_SECONDS,
            name="shared state prune",
        )
        # Each replica's own file: no lease, and only with replicas (one server's start-up
        # reconciliation covers it).
        self.history_purge = Periodic(
            JobClock(),
            self.reconciler.purge_local_history,
            interval_seconds=PRUNE_INTERVAL_SECONDS if self.replicated else 0,
            first_delay_seconds=LOCAL_HISTORY_FIRST_DELAY_SECONDS,
            name="local history purge",
        )
        if self.replicated:  # one process alone runs its jobs on its own timer, as it always did
            for job in (self.hygiene_scheduler, self.sweeper, self.pruner):
                job.under_lease(self.leases, ttl)
        # After the stores opened: what they made is narrowed too where the umask was not
        # private (a server built in another process's code, as tests do).
        for root in dict.fromkeys((settings.data_path, settings.state_path)):
            for line in file_modes.tighten(root).warnings():
                log.warning("%s", line)

    def jobs_status(self) -> dict[str, object]:
        """Each scheduled job's runs on this replica, and whether it holds the job's lease."""
        return {job.name: job.status() for job in (self.sweeper, self.hygiene_scheduler, self.pruner)}

    def close(self) -> None:
        self.service.close()
        self.engine.close()
        self.database.close()
