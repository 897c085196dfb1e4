"""SQL metadata: the tables OpenMemory had, plus tokens.

A memory's id is the id of its vector point, so SQL and the vector store share one key.
Timestamps are naive UTC (SQLite has no time zones); the API turns them into epoch seconds
or ISO strings as the contract wants.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any, Protocol

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    DateTime,
    Enum,
    ForeignKey,
    Index,
    String,
    Text,
    UniqueConstraint,
    Uuid,
    text,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship

# The states are the column's type; the enum lives in a module without the database, so the
# layers that must not import this one (the edges) name them from the same place.
from ..domain.memory_state import MemoryState


def utcnow() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)


class Base(DeclarativeBase):
    type_annotation_map = {dict[str, Any]: JSON}


class User(Base):
    __tablename__ = "users"

    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True, default=uuid.uuid4)
    user_id: Mapped[str] = mapped_column(String(64), unique=True, index=True)
    name: Mapped[str | None] = mapped_column(String(200))
    email: Mapped[str | None] = mapped_column(String(320), unique=True)
    metadata_: Mapped[dict[str, Any]] = mapped_column("metadata", JSON, default=dict)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow, index=True)
    updated_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow, onupdate=utcnow)


class App(Base):
    __tablename__ = "apps"
    __table_args__ = (UniqueConstraint("owner_id", "name", name="idx_app_owner_name"),)

    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True, default=uuid.uuid4)
    owner_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(64), index=True)
    description: Mapped[str | None] = mapped_column(Text)
    metadata_: Mapped[dict[str, Any]] = mapped_column("metadata", JSON, default=dict)
    is_active: Mapped[bool] = mapped_column(Boolean, default=True, index=True)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow, index=True)
    updated_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow, onupdate=utcnow)

    owner: Mapped[User] = relationship()


class ConfigEntry(Base):
    __tablename__ = "configs"

    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True, default=uuid.uuid4)
    key: Mapped[str] = mapped_column(String(64), unique=True, index=True)
    value: Mapped[dict[str, Any]] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow, onupdate=utcnow)


class Memory(Base):
    __tablename__ = "memories"
    __table_args__ = (
        Index("idx_memory_user_state", "user_id", "state"),
        Index("idx_memory_app_state", "app_id", "state"),
        # One row per user and text (deleted rows keep no hash): de-duplication the database enforces.
        Index("idx_memory_user_hash", "user_id", "content_hash", unique=True),
        # A turn's neighbours in (captured_at, created_at) order: one seek each (migration 0014).
        Index("ix_memories_conversation_order", "user_id", "conversation_id", "captured_at", "created_at"),
        Index("ix_memories_scope", "user_id", "project", "task"),
        # A memory-tool file's path names one memory of its user (deleted rows keep no path).
        Index("idx_memory_user_path", "user_id", "path", unique=True),
        # The newest turn of a user (the short-term tier's conversation), without a scan.
        Index("ix_memories_user_captured", "user_id", "captured_at"),
        # A SessionStart briefing: a scope's newest memories, and its most recalled, each a
        # seek (migration 0015); only recalled memories are in the second.
        Index("ix_memories_recent", "user_id", "project", "created_at"),
        # A user's memories newest first, a page at a time (the lists of the UI and OpenMemory).
        Index("ix_memories_user_created", "user_id", "created_at"),
        # The insights page's redacted and soon-expiring memories: each a seek over those only
        # (migration 0017).
        Index(
            "ix_memories_redacted",
            "user_id",
            "created_at",
            sqlite_where=text("redactions > 0"),
            postgresql_where=text("redactions > 0"),
        ),
        # The memories the entity rules have not read (memories/organise/entities.py, migration 0018).
        Index(
            "ix_memories_entities_unread",
            "user_id",
            "state",
            sqlite_where=text("entities_indexed = 0"),
            postgresql_where=text("entities_indexed = false"),
        ),
        Index(
            "ix_memories_user_expiring",
            "user_id",
            "expires_at",
            sqlite_where=text("expires_at IS NOT NULL"),
            postgresql_where=text("expires_at IS NOT NULL"),
        ),
        Index(
            "ix_memories_recalled",
            "user_id",
            "project",
            "recalls",
            "created_at",
            sqlite_where=text("recalls > 0"),
            postgresql_where=text("recalls > 0"),
        ),
    )

    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True, default=uuid.uuid4)
    user_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    app_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("apps.id", ondelete="CASCADE"))
    content: Mapped[str] = mapped_column(Text)
    content_hash: Mapped[str | None] = mapped_column(String(64))
    metadata_: Mapped[dict[str, Any]] = mapped_column("metadata", JSON, default=dict)
    state: Mapped[MemoryState] = mapped_column(
        Enum(MemoryState, name="memorystate", native_enum=False, length=16), default=MemoryState.active
    )
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow, index=True)
    updated_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow, onupdate=utcnow)
    archived_at: Mapped[datetime | None] = mapped_column(DateTime)
    deleted_at: Mapped[datetime | None] = mapped_column(DateTime)
    # Provenance: where the memory came from and under what consent.
    channel: Mapped[str | None] = mapped_column(String(16), index=True)
    project: Mapped[str | None] = mapped_column(String(512), index=True)
    conversation_id: Mapped[str | None] = mapped_column(String(128), index=True)
    model: Mapped[str | None] = mapped_column(String(128))
    captured_at: Mapped[datetime | None] = mapped_column(DateTime)
    consent: Mapped[str | None] = mapped_column(String(16))
    redactions: Mapped[int] = mapped_column(default=0)
    expires_at: Mapped[datetime | None] = mapped_column(DateTime, index=True)
    # Scope: ``project`` None is global; a task belongs to the memory's project.
    task: Mapped[str | None] = mapped_column(String(256))
    #: Whether the entity rules have read this memory (memories/organise/entities.py backfills the rest).
    entities_indexed: Mapped[bool] = mapped_column(Boolean, default=False, server_default="0")
    # Anthropic's memory tool: the file this memory is (``/memories/...``), or none.
    path: Mapped[str | None] = mapped_column(String(512))
    #: The mid-term segment a conversation turn belongs to (memories/profile/tiers.py); null until
    #: the tiers are refreshed, and for memories in no conversation.
    segment_id: Mapped[uuid.UUID | None] = mapped_column(Uuid, index=True)
    #: How many times a search returned it or a hook injected it: the access log's rows of those
    #: types, counted as they are written (store/access_log.py).
    recalls: Mapped[int] = mapped_column(default=0, server_default="0")
    #: When it was last recalled (the newest of those rows); None: never.
    recalled_at: Mapped[datetime | None] = mapped_column(DateTime)

    user: Mapped[User] = relationship()
    app: Mapped[App] = relationship()
    categories: Mapped[list[Category]] = relationship(secondary="memory_categories", lazy="selectin")


class MemoryFields(Protocol):
    """What a stored memory reads as: a :class:`Memory`, or a row of :data:`MEMORY_COLUMNS`
    (search hits are rows: loading ORM objects made every search slower; docs/search.md,
    "Latency")."""

    id: uuid.UUID
    user_id: uuid.UUID
    app_id: uuid.UUID
    content: str
    content_hash: str | None
    metadata_: dict[str, Any]
    state: MemoryState
    created_at: datetime
    updated_at: datetime
    channel: str | None
    project: str | None
    conversation_id: str | None
    model: str | None
    captured_at: datetime | None
    consent: str | None
    redactions: int
    expires_at: datetime | None
    task: str | None
    path: str | None
    segment_id: uuid.UUID | None


#: A memory's columns under their attribute names (``metadata_`` included), for a row that
#: reads as :class:`MemoryFields`.
MEMORY_COLUMNS = tuple(getattr(Memory, name).label(name) for name in MemoryFields.__annotations__)


class Category(Base):
    __tablename__ = "categories"

    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True, default=uuid.uuid4)
    name: Mapped[str] = mapped_column(String(64), unique=True, index=True)
    description: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow, onupdate=utcnow)


class MemoryCategory(Base):
    __tablename__ = "memory_categories"

    memory_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("memories.id", ondelete="CASCADE"), primary_key=True, index=True
    )
    category_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("categories.id", ondelete="CASCADE"), primary_key=True, index=True
    )


class MemoryStatusHistory(Base):
    __tablename__ = "memory_status_history"

    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True, default=uuid.uuid4)
    memory_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("memories.id", ondelete="CASCADE"), index=True)
    changed_by: Mapped[uuid.UUID | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"))
    old_state: Mapped[str] = mapped_column(String(16))
    new_state: Mapped[str] = mapped_column(String(16))
    changed_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow, index=True)


class MemoryAccessLog(Base):
    __tablename__ = "memory_access_logs"
    #: An app's distinct memories read are counted from this index alone (migration 0019).
    __table_args__ = (Index("ix_memory_access_logs_app_memory", "app_id", "memory_id"),)

    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True, default=uuid.uuid4)
    memory_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("memories.id", ondelete="CASCADE"), index=True)
    app_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("apps.id", ondelete="CASCADE"))
    accessed_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow, index=True)
    access_type: Mapped[str] = mapped_column(String(32), index=True)
    metadata_: Mapped[dict[str, Any]] = mapped_column("metadata", JSON, default=dict)


class ApiToken(Base):
    """A user's bearer token; only its SHA-256 is stored."""

    __tablename__ = "api_tokens"

    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True, default=uuid.uuid4)
    user_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    name: Mapped[str | None] = mapped_column(String(100))
    token_hash: Mapped[str] = mapped_column(String(64), unique=True, index=True)
    prefix: Mapped[str] = mapped_column(String(16))
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    last_used_at: Mapped[datetime | None] = mapped_column(DateTime)
    revoked_at: Mapped[datetime | None] = mapped_column(DateTime)

    user: Mapped[User] = relationship()


class ConsentRule(Base):
    """A standing decision: captures for this user matching app and project patterns are
    allowed or denied without asking. Patterns are shell-style globs (``*`` matches all)."""

    __tablename__ = "consent_rules"

    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True, default=uuid.uuid4)
    user_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    app_pattern: Mapped[str] = mapped_column(String(128), default="*")
    project_pattern: Mapped[str] = mapped_column(String(512), default="*")
    effect: Mapped[str] = mapped_column(String(8))
    created_by: Mapped[str | None] = mapped_column(String(100))
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)


class ConsentDecision(Base):
    """Every consent decision: who or which rule decided what about which memory, when."""

    __tablename__ = "consent_decisions"

    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True, default=uuid.uuid4)
    memory_id: Mapped[uuid.UUID] = mapped_column(Uuid, index=True)
    user_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    decision: Mapped[str] = mapped_column(String(16))
    decided_by: Mapped[str] = mapped_column(String(100))
    rule_id: Mapped[uuid.UUID | None] = mapped_column(Uuid)
    edited: Mapped[bool] = mapped_column(Boolean, default=False)
    decided_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow, index=True)


class HygieneProposal(Base):
    """A change the hygiene job proposes (merge duplicates, archive a superseded, junk or stale
    memory), its decision, and what undoing it needs: memory ids, states and metadata, never
    text beyond the preview the owner reviews."""

    __tablename__ = "hygiene_proposals"
    __table_args__ = (Index("idx_hygiene_user_status", "user_id", "status"),)

    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True, default=uuid.uuid4)
    user_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    kind: Mapped[str] = mapped_column(String(16))
    #: open, applied, rejected, undone, void (its memories changed before a decision)
    status: Mapped[str] = mapped_column(String(16), default="open")
    reason: Mapped[str] = mapped_column(Text)
    memory_ids: Mapped[list[str]] = mapped_column(JSON)
    keep_id: Mapped[uuid.UUID | None] = mapped_column(Uuid)
    preview: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    score: Mapped[float] = mapped_column(default=1.0)
    #: kind and sorted memory ids, hashed: a decided proposal is not proposed again.
    signature: Mapped[str] = mapped_column(String(64), index=True)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow, index=True)
    decided_at: Mapped[datetime | None] = mapped_column(DateTime)
    decided_by: Mapped[str | None] = mapped_column(String(100))
    undo_until: Mapped[datetime | None] = mapped_column(DateTime)
    undo: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)


class HygieneRule(Base):
    """A standing hygiene decision of a user: proposals of ``kind`` are applied without asking
    (and, for junk, junk captures never reach the consent queue)."""

    __tablename__ = "hygiene_rules"
    __table_args__ = (UniqueConstraint("user_id", "kind", name="idx_hygiene_rule_user_kind"),)

    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True, default=uuid.uuid4)
    user_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    kind: Mapped[str] = mapped_column(String(16))
    created_by: Mapped[str | None] = mapped_column(String(100))
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)


class CaptureFilterCount(Base):
    """How many captures the junk filter kept out of the consent queue, per user and reason."""

    __tablename__ = "capture_filter_counts"

    user_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), primary_key=True)
    reason: Mapped[str] = mapped_column(String(32), primary_key=True)
    count: Mapped[int] = mapped_column(default=0)
    last_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)


class MemoryLink(Base):
    """A typed link between two memories of one user (``link_memories``); stored once, read
    from both ends."""

    __tablename__ = "memory_links"
    __table_args__ = (UniqueConstraint("source_id", "target_id", "relation", name="uq_memory_link"),)

    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True, default=uuid.uuid4)
    user_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    source_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("memories.id", ondelete="CASCADE"), index=True)
    target_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("memories.id", ondelete="CASCADE"), index=True)
    relation: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)


class Entity(Base):
    """Something memories mention: a person, project, tool or file, found by rules."""

    __tablename__ = "entities"
    __table_args__ = (UniqueConstraint("user_id", "kind", "name", name="uq_entity_user_kind_name"),)

    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True, default=uuid.uuid4)
    user_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    kind: Mapped[str] = mapped_column(String(16))
    name: Mapped[str] = mapped_column(String(256), index=True)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)


class MemoryEntity(Base):
    __tablename__ = "memory_entities"

    memory_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("memories.id", ondelete="CASCADE"), primary_key=True, index=True
    )
    entity_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("entities.id", ondelete="CASCADE"), primary_key=True, index=True
    )


class Segment(Base):
    """A mid-term page group: a run of one conversation's turns, with its heat (memories/profile/tiers.py)."""

    __tablename__ = "segments"
    __table_args__ = (Index("ix_segments_user_state_heat", "user_id", "state", "heat"),)

    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True, default=uuid.uuid4)
    user_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    conversation_id: Mapped[str] = mapped_column(String(128), index=True)
    project: Mapped[str | None] = mapped_column(String(512))
    started_at: Mapped[datetime] = mapped_column(DateTime)
    ended_at: Mapped[datetime] = mapped_column(DateTime)
    turns: Mapped[int] = mapped_column(default=0)
    visits: Mapped[int] = mapped_column(default=0)
    last_visit_at: Mapped[datetime | None] = mapped_column(DateTime)
    heat: Mapped[float] = mapped_column(default=0.0)
    #: "active" (mid-term) or "archived" (evicted by the capacity limit, its turns archived).
    state: Mapped[str] = mapped_column(String(16), default="active")
    #: Turns already given to the profile when the segment was last promoted.
    promoted_turns: Mapped[int] = mapped_column(default=0)
    promoted_at: Mapped[datetime | None] = mapped_column(DateTime)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow, onupdate=utcnow)


class ProfileFact(Base):
    """A fact of the long-term profile: about the user (``subject`` "user") or the assistant's
    knowledge ("assistant"). A deleted fact is a tombstone: no text, only the hash of its
    normalised text, so that extracting it again finds it deleted (memories/profile/facts.py)."""

    __tablename__ = "profile_facts"
    __table_args__ = (UniqueConstraint("user_id", "subject", "fact_hash", name="uq_profile_fact"),)

    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True, default=uuid.uuid4)
    user_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    subject: Mapped[str] = mapped_column(String(16))
    category: Mapped[str] = mapped_column(String(32))
    text: Mapped[str] = mapped_column(Text, default="")
    fact_hash: Mapped[str] = mapped_column(String(64))
    #: "rules", "llm" or "user" (written or edited by the user).
    source: Mapped[str] = mapped_column(String(16))
    #: The ids of the memories the fact was extracted from.
    memory_ids: Mapped[list[str]] = mapped_column(JSON, default=list)
    #: "active" or "deleted" (a tombstone).
    state: Mapped[str] = mapped_column(String(16), default="active")
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow, onupdate=utcnow)


class ProfileMark(Base):
    """How far the profile has read a user's memories of no conversation (by creation time)."""

    __tablename__ = "profile_marks"

    user_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), primary_key=True)
    extracted_until: Mapped[datetime] = mapped_column(DateTime)
    #: The memories created at exactly ``extracted_until`` that were read (a clock may repeat).
    extracted_ids: Mapped[list[str]] = mapped_column(JSON, default=list)


class SharedValue(Base):
    """State that every API replica must see alike (store/shared_state.py): the hooks' sessions,
    the MCP callers' current project; ``count`` is for counters. A row past ``expires_at`` is
    gone for readers and pruned by a job."""

    __tablename__ = "shared_state"

    scope: Mapped[str] = mapped_column(String(255), primary_key=True)
    key: Mapped[str] = mapped_column(String(255), primary_key=True)
    value: Mapped[Any] = mapped_column(JSON, nullable=True)
    count: Mapped[int] = mapped_column(BigInteger, default=0)
    expires_at: Mapped[datetime | None] = mapped_column(DateTime, index=True)
    updated_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow, onupdate=utcnow)


class JobLease(Base):
    """Which replica runs a background job (store/leases.py): ``holder`` until ``expires_at``,
    renewed while it runs; ``last_run_at`` spaces the runs out across replicas."""

    __tablename__ = "job_leases"

    name: Mapped[str] = mapped_column(String(64), primary_key=True)
    holder: Mapped[str] = mapped_column(String(255))
    expires_at: Mapped[datetime] = mapped_column(DateTime)
    last_run_at: Mapped[datetime | None] = mapped_column(DateTime)
    runs: Mapped[int] = mapped_column(BigInteger, default=0)


class Team(Base):
    """A team (memories/teams/): its shared memories are owned by ``owner_user_id``, a user row
    of its own that no token names (``team.<hex>``), so the store treats them as any user's."""

    __tablename__ = "teams"

    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True, default=uuid.uuid4)
    name: Mapped[str] = mapped_column(String(64), unique=True)
    owner_user_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), unique=True)
    created_by: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)


class TeamMember(Base):
    """A user's role in a team: owner, member or reader."""

    __tablename__ = "team_members"
    __table_args__ = (UniqueConstraint("team_id", "user_id", name="uq_team_member"),)

    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True, default=uuid.uuid4)
    team_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("teams.id", ondelete="CASCADE"), index=True)
    user_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    role: Mapped[str] = mapped_column(String(16))
    added_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)


class TeamInvitation(Base):
    """An invitation of one user into a team; accepted once, by that user, with its code (only
    its SHA-256 digest is stored)."""

    __tablename__ = "team_invitations"

    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True, default=uuid.uuid4)
    team_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("teams.id", ondelete="CASCADE"), index=True)
    invitee: Mapped[str] = mapped_column(String(64))
    role: Mapped[str] = mapped_column(String(16))
    code_hash: Mapped[str] = mapped_column(String(64), unique=True)
    invited_by: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    expires_at: Mapped[datetime] = mapped_column(DateTime)
    accepted_at: Mapped[datetime | None] = mapped_column(DateTime)


class TeamAudit(Base):
    """Who read or wrote which team memory, and membership changes (``memory_id`` None)."""

    __tablename__ = "team_audit"

    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True, default=uuid.uuid4)
    team_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("teams.id", ondelete="CASCADE"), index=True)
    actor: Mapped[str] = mapped_column(String(64))
    action: Mapped[str] = mapped_column(String(16))
    memory_id: Mapped[uuid.UUID | None] = mapped_column(Uuid)
    detail: Mapped[str | None] = mapped_column(String(200))
    at: Mapped[datetime] = mapped_column(DateTime, default=utcnow, index=True)
