"""The memory service: every read and write of memories goes through here.

REST routes, MCP tools and the hooks are thin edges over :class:`MemoryService`. It builds one
part per noun and exposes them; an edge calls the part's own typed method
(``service.writes.add_memory(...)``, ``service.reads.search(...)``), never an alias:

    owners           users and their apps, the paused-app check (store/owners.py)
    writes           every write, through the policy gate (write/; quota: usage, junk
                     captures: capture_filter)
    states, trash    archive, pause, delete, reject a pending item; restorable deletes
    erasure, reclaim after deletes the text leaves the files and the space the disk
    scopes, links, entities   global/project/task scopes, typed links, what memories mention
    pipeline, reads  how a search runs and ranks (search/); one memory, lists, mem0's shapes
    recall, hooks    what Claude Code's hooks inject, and its hook events answered
    tiers, profile, memoryos   short/mid-term tiers, the long-term profile, MemoryOS's tools
    queries, apps, insights    the read model of the REST API and the web UI
    storage, reflection, backup, openmemory_import, consent, saved_config

A few methods compose parts (:meth:`move_memories`, :meth:`restore_memories`,
:meth:`memory_tool`, :meth:`health`, :meth:`close`). The jobs that run beside requests
(hygiene, retention, reconciliation) are built in ``server_parts.py``.

SQL is the source of truth for ownership, state and categories; the vector store (mem0's
engine) is kept in step with it: a memory's SQL id is its vector id, and its state is
mirrored into the vector payload so searches filter in the store.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from ..config import Settings
from ..db.database import Database
from ..db.models import utcnow
from ..errors import Unavailable
from ..search.pipeline import Search
from ..store.access_log import AccessLog
from ..store.owners import Owners
from ..store.shared_state import SharedState
from ..store.vectors import VectorEngine, Vectors
from .consent import ConsentQueue
from .lifecycle.erasure import Erasure
from .lifecycle.reclaim import Reclaim
from .lifecycle.states import States
from .lifecycle.storage import Storage
from .lifecycle.trash import Trash
from .memory_files.commands import run_command
from .memory_files.file_store import SqlFileStore
from .organise.entities import Entities
from .organise.links import Links
from .organise.scopes import Scopes, scope_of
from .portability.backup import Backup
from .portability.openmemory_import import OpenMemoryImport
from .profile.facts import Profile
from .profile.memoryos import MemoryOS
from .profile.tiers import Tiers
from .read_model.apps import Apps
from .read_model.insights import Insights
from .read_model.queries import Queries
from .read_model.reads import Reads
from .recall.context import BriefingSources, Recall
from .recall.hook_events import ClaudeCodeHooks
from .recall.shared_sessions import SharedSessions
from .reflection.analysis import Reflection
from .saved_config import SavedConfig
from .teams.membership import Teams
from .teams.search import TeamSearch
from .teams.sharing import TeamMemories
from .write.capture_filter import CaptureFilter
from .write.usage import Usage
from .write.writes import Writes


class MemoryService:
    def __init__(
        self,
        database: Database,
        engine: VectorEngine,
        settings: Settings,
        clock: Callable[[], datetime] | None = None,
        shared: SharedState | None = None,
    ) -> None:
        self.database = database
        #: State replicas share (store/shared_state.py); None: this process is the only server.
        self.shared = shared
        self.engine = engine
        self.settings = settings
        self.clock = clock or utcnow
        self.vectors = Vectors(engine, has_llm=settings.llm.provider != "none")
        self.owners = Owners(database)
        self.usage = Usage(shared)
        self.access_log = AccessLog(database)
        self.capture_filter = CaptureFilter(settings.hygiene.filter_captures)
        self.writes = Writes(
            database, settings, self.owners, self.vectors, self.usage, self.now, self.capture_filter
        )
        self.reclaim = Reclaim(database, engine, settings)
        self.erasure = Erasure(database, engine, then=self.reclaim.after_delete)
        self.profile = Profile(database, self.owners, settings.profile, self.now)
        self.states = States(
            database,
            self.owners,
            self.vectors,
            self.usage,
            self.erasure,
            settings.privacy.trash_days,
            on_delete=self.profile.prune_users,
        )
        self.trash = Trash(database, self.owners, self.vectors, self.usage, self.states)
        self.scopes = Scopes(database, self.owners, self.vectors, self.states)
        self.links = Links(database, self.owners)
        self.entities = Entities(database, self.owners)
        self.pipeline = Search(database, settings, self.owners, self.vectors, self.access_log, self.now)
        self.teams = Teams(database, self.owners, settings.teams, self.now)
        self.team_memories = TeamMemories(database, self.teams, self.writes, self.states, settings.teams)
        self.team_search = TeamSearch(database, self.teams, self.pipeline, settings.teams.search_slots)
        self.reads = Reads(database, self.owners, self.access_log, self.pipeline, self.team_search.search)
        self.tiers = Tiers(database, settings, self.owners, self.states, self.profile, self.now)
        self.memoryos = MemoryOS(self.tiers, self.profile, self.pipeline, self.writes.add_memory, self.now)
        self.recall = Recall(
            database,
            settings.claude_code,
            self.owners,
            self.team_search.search,
            self.access_log,
            SharedSessions(shared) if shared is not None else None,
            sources=BriefingSources(
                profile_lines=self.profile.briefing_lines if settings.profile.enabled else None,
                profile_facts=settings.profile.briefing_facts,
                after_briefing=self.tiers.schedule_refresh if settings.profile.enabled else None,
                team_memories=self.team_search.recent,
                team_places=settings.teams.search_slots,
            ),
        )
        self.hooks = ClaudeCodeHooks(
            self.recall, self.writes.add_memory, capture=settings.claude_code.capture_on_stop
        )
        # What the edges read and the imports they run, each over the parts it needs.
        self.queries = Queries(database, self.owners, self.access_log, self.links, self.reads)
        self.apps = Apps(database, self.access_log)
        self.insights = Insights(database, self.owners, self.access_log)
        self.storage = Storage(database, settings, self.owners, self.usage, self.writes, self.reclaim)
        self.reflection = Reflection(database, self.owners, settings, self.now)
        self.backup = Backup(database, settings, self.owners, self.writes, self.states)
        self.openmemory_import = OpenMemoryImport(
            database, self.owners, self.writes, self.states, self.vectors
        )
        self.consent = ConsentQueue(
            database,
            self.owners,
            self.writes,
            self.reads,
            self.states,
            self.erasure,
            settings.privacy.pending_expire_days,
        )
        self.saved_config = SavedConfig(database, settings)

    def move_memories(
        self, *, user_id: str, memory_ids: list[Any], project: str | None, task: str | None = None
    ) -> int:
        """Move memories into the scope ``project``/``task`` names (no project: global)."""
        return self.scopes.move(memory_ids, scope_of(project, task), user_id=user_id)

    def restore_memories(self, *, user_id: str, memory_ids: list[Any]) -> dict[str, Any]:
        return self.trash.restore(memory_ids, user_id=user_id)

    def memory_tool(self, *, user_id: str, app_name: str, command: Mapping[str, Any]) -> str:
        """Run one command of Anthropic's memory tool on the user's files; the result text.
        A paused app is refused, for reading as for writing, as everywhere."""
        self.owners.reader(user_id, app_name, "use memory files")
        store = SqlFileStore(
            self.database,
            self.writes,
            self.states,
            self.settings.memory_tool,
            user_id=user_id,
            app_name=app_name,
        )
        return run_command(command, store)

    def now(self) -> datetime:
        # The parts ask the service, not the clock it started with: tests set ``clock`` later.
        return self.clock()

    def close(self) -> None:
        """Stop the search threads and wait for a background reclaim (before the engine they use
        is closed), and write the queued access log."""
        self.reclaim.close()
        self.entities.close()
        self.tiers.close()
        self.pipeline.close()
        self.teams.close()
        self.access_log.close()

    def health(self) -> dict[str, str]:
        status = {}
        try:
            self.database.check()
            status["database"] = "ok"
        except Unavailable as exc:
            status["database"] = exc.message
        try:
            self.vectors.check()
            status["vector_store"] = "ok"
        except Exception as exc:  # noqa: BLE001 - reported, not raised: this is the health probe
            cause = exc.__cause__ if isinstance(exc, Unavailable) and exc.__cause__ else exc
            status["vector_store"] = f"unavailable: {cause.__class__.__name__}"
            if isinstance(exc, Unavailable) and exc.__cause__ is None:
                status["vector_store"] = f"unavailable: {exc.message}"  # ours: says what to do
        return status
