"""The API server's long-lived parts (metadata database, identity, engine, memory service, and
the jobs that run beside requests), which the composition root in ``api/app.py`` builds from
its settings.

The jobs are built here, once, from the service's parts: hygiene and its schedule, retention
and its sweeper, the reconciler. (Reclaim is the service's own: every delete schedules one.)
The ``*_of`` functions build one job over a service for whoever holds a service without the
rest of the server (``ccmem doctor``, tests, benchmarks).
"""

from __future__ import annotations

from ..auth.identity import Identity
from ..config import PrivacySettings, Settings
from ..db.database import Database
from ..engine.factory import Engine
from .hygiene.proposals import Hygiene, HygieneScheduler
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


class ServerParts:
    """Everything the server holds open, built in dependency order and closed in reverse."""

    def __init__(self, settings: Settings) -> None:
        settings.data_path.mkdir(parents=True, exist_ok=True)
        self.settings = settings
        self.database = Database(settings.database_url)
        self.database.migrate()
        self.identity = Identity(self.database, settings.server.admin_token)
        self.engine = Engine.open(settings)
        self.service = MemoryService(self.database, self.engine, settings)
        self.reconciler = reconciler_of(self.service)
        self.hygiene = hygiene_of(self.service)
        self.hygiene_scheduler = HygieneScheduler(self.hygiene, settings.hygiene.schedule_hours)
        self.retention = retention_of(self.service)
        self.sweeper = Sweeper(self.retention, settings.privacy.purge_interval_minutes)

    def close(self) -> None:
        self.service.close()
        self.engine.close()
        self.database.close()
