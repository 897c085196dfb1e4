"""Configuration: `config.yaml`, overridden by `.env`, overridden by the environment.

Loaded once by each entry point (the composition root) through :func:`load_settings` and
validated there: a bad value raises :class:`ConfigError` naming the dotted key and the value.

Environment overrides:

* ``CCMEM_<SECTION>__<KEY>`` for any key, nested with double underscores, for example
  ``CCMEM_SERVER__PORT=9000`` or ``CCMEM_MEM0__MCP__CLIENT_NAME=cursor``;
* the conventional names ``DATABASE_URL``, ``QDRANT_URL``, ``QDRANT_API_KEY`` and
  ``CCMEM_ADMIN_TOKEN`` (see :data:`WELL_KNOWN_ENV`).

Values from the environment are parsed as YAML scalars, so ``true``, ``8765`` and ``null`` mean
what they look like. Beside this module: ``server.py`` (the ``server`` section) and
``locations.py`` (which config file is read, the XDG directories).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Literal

import yaml
from dotenv import dotenv_values
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from pydantic_core import ErrorDetails

from ..errors import ConfigError
from . import locations as _files
from .locations import ConfigChoice, default_config_path, user_dirs  # noqa: F401 - where callers look for them
from .server import RateLimitSettings, RegistrationSettings, ServerSettings, TlsSettings  # noqa: F401

ENV_PREFIX = "CCMEM_"
#: A user token for the clients (CLI, Claude Code's hooks); the server never reads it.
TOKEN_ENV = "CCMEM_TOKEN"
#: The name `ccmem stack up` gives the capture proxy's token (the UI finds it by this name).
PROXY_TOKEN_NAME = "capture proxy (ccmem stack up)"

#: Conventional environment variables and the dotted key each one sets.
WELL_KNOWN_ENV: dict[str, str] = {
    "DATABASE_URL": "storage.database_url",
    "QDRANT_URL": "storage.qdrant_url",
    "QDRANT_API_KEY": "storage.qdrant_api_key",
    "CCMEM_ADMIN_TOKEN": "server.admin_token",
    "CCMEM_PROXY_TOKEN": "proxy.token",
    "CCMEM_UI_SECRET": "ui.session_secret",
}

#: Keys whose values are secrets: masked in every view of the config.
SECRET_KEYS = {
    "server.admin_token",
    "storage.qdrant_api_key",
    "embedder.api_key",
    "llm.api_key",
    "proxy.token",
    "ui.session_secret",
}


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class StorageSettings(_Section):
    database_url: str | None = None
    qdrant_url: str | None = None
    qdrant_api_key: str | None = None
    collection_name: str = Field("memories", pattern=r"^[A-Za-z0-9_-]{1,64}$")
    #: Reclaiming space after deletes (memories/lifecycle/reclaim.py, docs/storage.md): a store is
    #: rewritten once this share of it is reclaimable and it holds at least reclaim_min_mb.
    auto_reclaim: bool = True
    reclaim_threshold: float = Field(0.25, gt=0, le=1)
    reclaim_min_mb: float = Field(1.0, ge=0)
    reclaim_check_minutes: float = Field(10, ge=0)
    #: Points from which the embedded vector store builds its HNSW index in a child process
    #: (engine/index_build.py); 0: never, every search scans every vector.
    vector_index_from: int = Field(20_000, ge=0)
    #: Below that size the embedded store answers a search from a NumPy copy of its vectors,
    #: which releases the interpreter lock where Edge's query keeps it (engine/exact_scan.py).
    vector_exact_scan: bool = True

    @field_validator("database_url")
    @classmethod
    def _known_database(cls, value: str | None) -> str | None:
        if value and not value.startswith(("sqlite:", "postgresql:", "postgresql+psycopg:", "postgres:")):
            raise ValueError("must be a sqlite:/// or postgresql:// URL")
        return value

    @field_validator("qdrant_url")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        if value and not value.startswith(("http://", "https://")):
            raise ValueError("must be an http:// or https:// URL")
        return value


class EmbedderSettings(_Section):
    provider: Literal["onnx-minilm", "openai", "ollama"] = "onnx-minilm"
    model: str = "all-MiniLM-L6-v2"
    dims: int = Field(384, ge=8, le=8192)
    api_key: str | None = None
    base_url: str | None = None


class LlmSettings(_Section):
    provider: Literal["none", "openai", "anthropic", "ollama"] = "none"
    model: str | None = None
    api_key: str | None = None
    base_url: str | None = None
    temperature: float = Field(0.1, ge=0, le=2)
    max_tokens: int = Field(2000, ge=1)


class McpSettings(_Section):
    enabled: bool = True
    base_url: str = "http://127.0.0.1:8765"
    client_name: str = Field("claude-code", pattern=r"^[A-Za-z0-9._-]{1,64}$")


class Mem0Settings(_Section):
    mcp: McpSettings = Field(default_factory=McpSettings)


class MemorySettings(_Section):
    auto_store: bool = True
    search_on_query: bool = True
    max_context_memories: int = Field(5, ge=1, le=100)


#: The write paths a memory can arrive by (provenance ``channel``).
Channel = Literal["capture", "import", "mcp", "rest", "ui"]


class PrivacySettings(_Section):
    require_consent: bool = True
    consent_channels: list[Channel] = Field(default_factory=lambda: list[Channel](["capture"]))
    pending_expire_days: int = Field(14, ge=1)
    auto_delete_after_days: int = Field(0, ge=0)
    purge_interval_minutes: int = Field(60, ge=1)
    mask_pii: bool = False
    #: Days a deleted memory stays restorable in the trash (text and vector kept); 0: a delete
    #: erases at once, as it always did.
    trash_days: int = Field(0, ge=0, le=3650)


class PerformanceSettings(_Section):
    cache_embeddings: bool = True
    batch_operations: bool = True
    max_memory_size_mb: float = Field(100, gt=0)
    max_memory_chars: int = Field(20_000, ge=100, le=1_000_000)
    capture_oversize: Literal["truncate", "reject"] = "truncate"
    #: None: what the largest write request can need (engine/disk_space.py's write_reserve).
    min_free_disk_mb: int | None = Field(None, ge=0, le=1_000_000)
    #: Writes warn once a user's stored text reaches this share of max_memory_size_mb.
    quota_warning_ratio: float = Field(0.8, gt=0, le=1)


class SearchSettings(_Section):
    """How search ranks: the conversation shares (:mod:`claude_code_memory.search.conversation`) and
    the optional boosts (:mod:`claude_code_memory.search.boosts`); 0 turns one off."""

    #: Candidates each retriever (dense, keyword) contributes before fusion.
    candidates: int = Field(20, ge=5, le=200)
    #: Reciprocal-rank fusion constant: each ranking adds 1 / (rrf_k + rank) to its items.
    rrf_k: int = Field(6, ge=1, le=1000)
    neighbour_share: float = Field(0.15, ge=0, le=1)
    conversation_share: float = Field(0.5, ge=0, le=1)
    #: The turn right after one that asks a question gains this share of its score instead of
    #: neighbour_share: the answer follows the question (search/priors.py). 0: off.
    answer_share: float = Field(0.5, ge=0, le=1)
    #: Scores of memories shorter than most candidates shrink by (length / reference) to this
    #: power: a short memory that matches a query's words rarely holds its answer
    #: (search/priors.py). 0: off.
    length_prior: float = Field(0.5, ge=0, le=2)
    #: The length (characters) at or past which a memory loses nothing to the length prior,
    #: when most candidates are longer: a one-sentence statement among long replies keeps its
    #: score (search/priors.py). 0: no cap, the candidates' lengths alone decide.
    length_reference_max: int = Field(300, ge=0, le=100_000)
    #: For a question asking when ("When did…", "How long ago…"), memories that name a time
    #: ("yesterday", "last week", "in May", "2023") gain this share of their score
    #: (search/priors.py). 0: off.
    when_boost: float = Field(0.0, ge=0, le=2)
    #: For a question that names a speaker ("What did Maria say about…"), memories that open
    #: with that speaker's label ("Maria: …") gain this share of their score: a person's own
    #: turn answers what they said or did (search/priors.py). 0: off.
    speaker_boost: float = Field(0.5, ge=0, le=5)
    #: A question about the user ("Where did I…") divides the scores of memories whose
    #: ``metadata.role`` is "assistant" by 1 + this; one about what the assistant said, the
    #: user's (search/priors.py). Memories without a role never move. 0: off.
    role_boost: float = Field(0.5, ge=0, le=5)
    #: The first 20 candidates gain this × the share of the query's words their text holds
    #: (search/priors.py). 0: off.
    coverage_share: float = Field(0.5, ge=0, le=5)
    recency_weight: float = Field(0.0, ge=0, le=1)
    recency_half_life_days: float = Field(30.0, gt=0)
    recall_weight: float = Field(0.0, ge=0, le=1)
    #: Searches from a known project see that project's memories and global ones, the
    #: project's ranked up by ``project_boost`` (a share of their score); false: every
    #: project's memories, as before scopes.
    scope_ranking: bool = True
    project_boost: float = Field(0.5, ge=0, le=10)
    #: Read relative times in queries ("last week", "two months ago", "in the summer") against
    #: the newest memory's time (search/relative_dates.py).
    relative_dates: bool = True
    #: Read times around events ("before the move", "around my birthday") from the event's
    #: own memories.
    event_dates: bool = True
    #: Rank the earliest candidates higher for "first", the latest for "most recently".
    order_ranking: bool = True
    #: For questions about how things stand now (``present_tense``: any in the present tense), of
    #: two best candidates within this share of each other's score, the newer ranks first.
    present_margin: float = Field(0.2, ge=0, le=1)
    present_tense: bool = False


class HygieneSettings(_Section):
    """The hygiene job (``memories/hygiene/proposals.py``, see docs/hygiene.md): proposals to merge
    near-duplicates and archive superseded, junk and stale memories, decided by their owner."""

    #: How often the job runs over every user's memories; 0: only on demand.
    schedule_hours: float = Field(24, ge=0, le=24 * 365)
    #: Cosine similarity two memories need to be checked as near-duplicates.
    duplicate_similarity: float = Field(0.85, ge=0.5, le=1)
    #: Cosine similarity a newer memory needs to be checked as superseding an older one.
    supersede_similarity: float = Field(0.7, ge=0.3, le=1)
    #: A memory older than this that no search or recall returned within it is proposed as
    #: stale; 0 turns the rule off.
    stale_days: int = Field(90, ge=0)
    #: How long an applied proposal can be undone (its archived memories are kept meanwhile).
    undo_days: int = Field(30, ge=1)
    #: A run reads each user's newest this many active memories: finding near-duplicates grows
    #: with the store (a clustered search above 20k) and would take hours at 1M; the time and
    #: memory a run costs at each size are in docs/hygiene.md, "The job's time".
    max_memories: int = Field(20_000, ge=100)
    #: Junk captures (acknowledgements, boilerplate, tool noise, fragments) never reach the
    #: consent queue; they are counted instead.
    filter_captures: bool = True


#: Where Claude Code starts truncating a hook's ``additionalContext``: no budget may pass it.
HOOK_CONTEXT_CEILING = 10_000


class ClaudeCodeSettings(_Section):
    """Claude Code's hooks (``POST /api/v1/hooks/claude-code``, see docs/hooks.md). Budgets are
    characters of ``additionalContext`` per event, the wrapper included; 0 turns that event's
    injection off."""

    memory_integration: bool = True
    fallback_mode: bool = True
    session_start_budget: int = Field(1200, ge=0, le=HOOK_CONTEXT_CEILING)
    prompt_budget: int = Field(1200, ge=0, le=HOOK_CONTEXT_CEILING)
    briefing_memories: int = Field(5, ge=1, le=50)
    prompt_memories: int = Field(5, ge=1, le=50)
    #: Cosine similarity (all-MiniLM-L6-v2: unrelated text scores about 0-0.2) a memory needs
    #: to be injected for a prompt, and the share of the best one's search score (0: off).
    recall_min_similarity: float = Field(0.35, ge=0, le=1)
    recall_relative_floor: float = Field(0.0, ge=0, le=1)
    capture_on_stop: bool = True


class HeatSettings(_Section):
    """A mid-term segment's heat (docs/profile.md): ``visit_weight * visits + length_weight *
    turns + recency_weight * exp(-hours since its last turn or visit / recency_tau_hours)``."""

    visit_weight: float = Field(1.0, ge=0)
    length_weight: float = Field(1.0, ge=0)
    recency_weight: float = Field(1.0, ge=0)
    recency_tau_hours: float = Field(24.0, gt=0)


class TiersSettings(_Section):
    """Short-term turns, mid-term segments with heat, promotion to the profile (docs/profile.md)."""

    #: Turns of a conversation answered as short-term memory (newest last).
    short_term_turns: int = Field(10, ge=1, le=100)
    #: A pause longer than this between two turns of one conversation starts a new segment.
    segment_gap_minutes: float = Field(30.0, gt=0)
    segment_max_turns: int = Field(20, ge=1, le=1000)
    #: Active segments kept per user; beyond it the coldest are archived (never deleted).
    mid_term_capacity: int = Field(2000, ge=1)
    #: A segment this hot is promoted: its facts go into the profile and knowledge.
    promote_threshold: float = Field(5.0, ge=0)
    heat: HeatSettings = Field(default_factory=HeatSettings)


class ProfileLlmSettings(_Section):
    """An OpenAI-compatible chat completions endpoint for fact extraction; unset = rules only.
    The key is read from the environment variable ``api_key_env`` names, never from a file."""

    base_url: str | None = None
    model: str | None = None
    api_key_env: str | None = Field(None, pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")
    timeout_seconds: float = Field(30.0, gt=0, le=600)

    @field_validator("base_url")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        if value and not value.startswith(("http://", "https://")):
            raise ValueError("must be an http:// or https:// URL")
        return value


class ProfileSettings(_Section):
    """The long-term profile: facts about the user and the assistant's knowledge."""

    enabled: bool = True
    #: Profile facts given in the SessionStart briefing (within its budget); 0 = none.
    briefing_facts: int = Field(5, ge=0, le=50)
    llm: ProfileLlmSettings = Field(default_factory=ProfileLlmSettings)


class ProxySettings(_Section):
    """The capture proxy (mitmdump with our addon, in its own virtualenv under ``proxy/``)."""

    host: str = "127.0.0.1"
    port: int = Field(8080, ge=1, le=65535)
    mode: Literal["forward", "reverse"] = "forward"
    upstream_hosts: list[str] = Field(default_factory=lambda: ["api.anthropic.com"], min_length=1)
    reverse_upstream: str = "https://api.anthropic.com"
    api_url: str = "http://127.0.0.1:8765"
    token: str | None = None
    user_id: str | None = None
    app: str = Field("claude-code", pattern=r"^[A-Za-z0-9._-]{1,64}$")
    skip_models: list[str] = Field(default_factory=lambda: ["claude-3-5-haiku*", "claude-haiku*"])
    capture_tool_results: bool = False
    outbox_max_rows: int = Field(10_000, ge=10)
    retry_max_seconds: float = Field(60, gt=0)
    #: Offer the model Anthropic's native memory tool in place of our MCP tool
    #: ``mcp__memory__memory_20250818`` and translate the names both ways (docs/memory-tool.md).
    memory_tool_bridge: bool = False


class ReflectionLlmSettings(_Section):
    """An OpenAI-compatible Chat Completions endpoint for the reflection's prose summaries
    (memories/reflection/llm_summary.py). Off while ``base_url`` is unset: the findings never
    leave the machine."""

    base_url: str | None = None
    model: str | None = None
    api_key_env: str = Field("OPENAI_API_KEY", pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")
    timeout_seconds: float = Field(30, gt=0, le=600)
    max_tokens: int = Field(600, ge=16, le=32_000)

    @field_validator("base_url")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        if value and not value.startswith(("http://", "https://")):
            raise ValueError("must be an http:// or https:// URL, e.g. http://127.0.0.1:11434/v1")
        return value or None

    @model_validator(mode="after")
    def _model_named(self) -> ReflectionLlmSettings:
        if self.base_url and not self.model:
            raise ValueError("reflection.llm.model must name a model when base_url is set")
        return self


class ReflectionSettings(_Section):
    """``analyze_conversations`` and ``suggest_next_actions`` (memories/reflection/analysis.py)."""

    max_memories: int = Field(2000, ge=10, le=100_000)
    llm: ReflectionLlmSettings = Field(default_factory=ReflectionLlmSettings)


class MemoryToolSettings(_Section):
    """Anthropic's memory tool (``memory_20250818``) on our store: its files are memories
    (docs/memory-tool.md). Caps per user; a write over one is refused and changes nothing."""

    max_file_bytes: int = Field(100_000, ge=1_000, le=10_000_000)
    max_files: int = Field(1_000, ge=1, le=1_000_000)


class UiSettings(_Section):
    """The management web UI (its own process; talks to the API over HTTP)."""

    host: str = "127.0.0.1"
    port: int = Field(3000, ge=1, le=65535)
    api_url: str = "http://127.0.0.1:8765"
    session_secret: str | None = None
    session_max_age_hours: int = Field(12, ge=1, le=24 * 30)
    secure_cookies: bool = False


#: OpenMemory's default user names: its UI's ``NEXT_PUBLIC_USER_ID`` and its server's ``USER``.
OPENMEMORY_DEFAULT_USERS = ["user", "default_user"]
_USER_ID = r"^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$"


class LocalModeSettings(_Section):
    """Requests without a token act as one user, on loopback only (docs/openmemory.md): for
    clients that cannot send a token (the stock OpenMemory UI, ``npx @openmemory/install``)."""

    enabled: bool = False
    user: str = Field("default_user", pattern=_USER_ID)
    aliases: list[str] = Field(default_factory=lambda: list(OPENMEMORY_DEFAULT_USERS))

    @field_validator("aliases")
    @classmethod
    def _user_ids(cls, value: list[str]) -> list[str]:
        for name in value:
            if not re.match(_USER_ID, name):
                raise ValueError(f"{name!r} is not a user id (1-64 letters, digits, '.', '_', '@' or '-')")
        return value


class OAuthSettings(_Section):
    """OAuth 2.1 as MCP's authorization spec asks (docs/oauth.md). Off by default; on, the API
    and the MCP endpoint are a resource server, and tokens come from the built-in authorization
    server, or from the OpenID Connect ``issuer`` when one is named. Bearer tokens from
    ``ccmem token create`` keep working beside OAuth tokens, with the user's full rights."""

    enabled: bool = False
    #: This server's public URL, the audience of its tokens (RFC 8707); on loopback it defaults
    #: to http://<server.host>:<server.port>, elsewhere it must be set.
    resource_url: str | None = None
    #: An external OpenID Connect issuer; null: the built-in authorization server.
    issuer: str | None = None
    #: The ``aud`` the external issuer puts in tokens for this server; default resource_url.
    audience: str | None = None
    #: The claim of an external issuer's token that names the user.
    user_claim: str = Field("sub", pattern=r"^[A-Za-z_][A-Za-z0-9_.:-]{0,63}$")
    access_token_minutes: int = Field(15, ge=1, le=24 * 60)
    refresh_token_days: int = Field(30, ge=1, le=3650)
    #: Client ID Metadata Documents at http://127.0.0.1 or localhost URLs (tests, development).
    allow_loopback_client_ids: bool = False
    registration: RegistrationSettings = Field(default_factory=RegistrationSettings)

    @field_validator("resource_url", "issuer")
    @classmethod
    def _url(cls, value: str | None) -> str | None:
        if value and not re.match(r"^https?://[^/?#\s]+(/[^?#\s]*)?$", value):
            raise ValueError("must be an http:// or https:// URL without a query or fragment")
        return value.rstrip("/") if value else value


class TeamsSettings(_Section):
    """Teams (docs/teams.md): shared memories, members and roles."""

    #: Memories one team may hold (its shares); a share past it is refused with 413.
    max_memories: int = Field(5000, ge=1, le=10_000_000)
    #: Places of a search's ``limit`` kept for team memories when they match (personal first).
    search_slots: int = Field(3, ge=0, le=100)
    #: Days an invitation code stays valid.
    invitation_days: int = Field(7, ge=1, le=365)
    #: A share masks personal data too, whatever ``privacy.mask_pii`` says for personal memories.
    mask_pii: bool = True


class AuthSettings(_Section):
    local_mode: LocalModeSettings = Field(default_factory=LocalModeSettings)
    oauth: OAuthSettings = Field(default_factory=OAuthSettings)


class Settings(_Section):
    server: ServerSettings = Field(default_factory=ServerSettings)
    auth: AuthSettings = Field(default_factory=AuthSettings)
    storage: StorageSettings = Field(default_factory=StorageSettings)
    embedder: EmbedderSettings = Field(default_factory=EmbedderSettings)
    llm: LlmSettings = Field(default_factory=LlmSettings)
    mem0: Mem0Settings = Field(default_factory=Mem0Settings)
    memory: MemorySettings = Field(default_factory=MemorySettings)
    privacy: PrivacySettings = Field(default_factory=PrivacySettings)
    performance: PerformanceSettings = Field(default_factory=PerformanceSettings)
    search: SearchSettings = Field(default_factory=SearchSettings)
    claude_code: ClaudeCodeSettings = Field(default_factory=ClaudeCodeSettings)
    tiers: TiersSettings = Field(default_factory=TiersSettings)
    profile: ProfileSettings = Field(default_factory=ProfileSettings)
    proxy: ProxySettings = Field(default_factory=ProxySettings)
    memory_tool: MemoryToolSettings = Field(default_factory=MemoryToolSettings)
    ui: UiSettings = Field(default_factory=UiSettings)
    hygiene: HygieneSettings = Field(default_factory=HygieneSettings)
    reflection: ReflectionSettings = Field(default_factory=ReflectionSettings)
    teams: TeamsSettings = Field(default_factory=TeamsSettings)

    # -- derived values -------------------------------------------------------------------
    @property
    def data_path(self) -> Path:
        return Path(self.server.data_dir).expanduser().resolve()

    @property
    def state_path(self) -> Path:
        return Path(self.server.state_dir).expanduser().resolve() if self.server.state_dir else self.data_path

    @property
    def database_url(self) -> str:
        if self.storage.database_url:
            url = self.storage.database_url
            # SQLAlchemy needs the driver named; people paste libpq URLs.
            for prefix in ("postgres://", "postgresql://"):
                if url.startswith(prefix):
                    return "postgresql+psycopg://" + url[len(prefix) :]
            return url
        return f"sqlite:///{self.data_path / 'memory.db'}"

    def masked(self) -> dict[str, Any]:
        """The effective settings as a dict, secrets replaced by a mask."""
        data = self.model_dump()
        for dotted in SECRET_KEYS:
            section, key = dotted.split(".")
            if data[section].get(key):
                data[section][key] = "********"
        return data


def all_keys(model: type[BaseModel] = Settings, prefix: str = "") -> list[str]:
    """Every dotted key the settings accept, for docs and the test that checks them."""
    keys: list[str] = []
    for name, field in model.model_fields.items():
        annotation = field.annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            keys.extend(all_keys(annotation, f"{prefix}{name}."))
        else:
            keys.append(f"{prefix}{name}")
    return keys


def _set_dotted(tree: dict[str, Any], dotted: str, value: Any) -> None:
    node = tree
    parts = dotted.split(".")
    for part in parts[:-1]:
        child = node.get(part)
        if not isinstance(child, dict):
            child = {}
            node[part] = child
        node = child
    node[parts[-1]] = value


def _parse_scalar(raw: str) -> Any:
    try:
        return yaml.safe_load(raw) if raw != "" else None
    except yaml.YAMLError:
        return raw


def _env_overrides(environ: dict[str, str]) -> list[tuple[str, Any]]:
    overrides: list[tuple[str, Any]] = []
    for name, dotted in WELL_KNOWN_ENV.items():
        if environ.get(name):
            # Tokens, URLs and keys are strings whatever they look like.
            overrides.append((dotted, environ[name]))
    for name, raw in environ.items():
        if name.startswith(ENV_PREFIX) and "__" in name:
            dotted = name[len(ENV_PREFIX) :].lower().replace("__", ".")
            overrides.append((dotted, _parse_scalar(raw)))
    return overrides


def _describe(error: ErrorDetails) -> str:
    key = ".".join(str(part) for part in error["loc"])
    value = error.get("input")
    if error["type"] == "extra_forbidden":
        return f"{key}: unknown setting (value {value!r}); see docs/configuration.md"
    return f"{key} = {value!r}: {error['msg']}"


def load_settings(
    config_path: str | Path | ConfigChoice | None = None,
    env_file: str | Path | None = None,
    environ: dict[str, str] | None = None,
    overrides: dict[str, Any] | None = None,
) -> Settings:
    """Read and validate the settings from :func:`~.locations.choose_config`'s file; ``env_file``
    defaults to ``.env`` beside it; relative paths in both are relative to its directory. The
    process environment wins over ``.env``; ``overrides`` (dotted keys, from flags) over all."""
    environ = dict(os.environ if environ is None else environ)
    choice = _files.choose_config(config_path, environ)
    path = choice.path
    tree: dict[str, Any] = {}
    if path.exists():
        try:
            loaded = yaml.safe_load(path.read_text(encoding="utf-8"))
        except yaml.YAMLError as exc:
            raise ConfigError(f"{path}: not valid YAML: {exc}") from exc
        if loaded is not None and not isinstance(loaded, dict):
            raise ConfigError(f"{path}: the top level must be a mapping of sections")
        tree = loaded or {}
    elif choice.explicit:
        raise ConfigError(f"config file {path} does not exist")

    dotenv_path = Path(env_file) if env_file else path.parent / ".env"
    if dotenv_path.exists():
        file_env = {k: v for k, v in dotenv_values(dotenv_path).items() if v is not None and k not in environ}
        for dotted, value in _env_overrides(file_env):
            _set_dotted(tree, dotted, value)
    _files.anchor_paths(tree, choice, environ)
    for dotted, value in _env_overrides(environ):
        _set_dotted(tree, dotted, value)
    for dotted, value in (overrides or {}).items():
        if value is not None:
            _set_dotted(tree, dotted, value)

    try:
        return Settings.model_validate(tree)
    except ValidationError as exc:
        problems = "; ".join(_describe(e) for e in exc.errors())
        raise ConfigError(f"invalid configuration: {problems}") from None
