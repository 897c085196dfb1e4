"""The API server's long-lived parts (metadata database, identity, engine, memory service),
which the composition root in ``api/app.py`` builds from its settings."""

from __future__ import annotations

from ..auth.identity import Identity
from ..config import Settings
from ..db.database import Database
from ..engine.factory import Engine
from .service import MemoryService


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

    def close(self) -> None:
        self.service.close()
        self.engine.close()
        self.database.close()
