"""The saved mem0 configuration document (the ``configs`` row with key ``"main"``), in
OpenMemory's shape::

    {"openmemory": {"custom_instructions": str | null},
     "mem0": {"llm": {"provider", "config": {...}},
              "embedder": {"provider", "config": {...}},
              "vector_store": {"provider", "config": {...}} | null}}

Where OpenMemory went wrong, this does what it meant:

* defaults come from the server's settings (no LLM, the offline all-MiniLM-L6-v2 embedder,
  ``vector_store: null`` = embedded Qdrant Edge), not from OpenAI;
* a replace saves and returns the saved config (OpenMemory's returned nothing, a 500);
* secrets (``api_key`` and similar fields) never leave in plaintext: they read as ``********``,
  or as the ``env:VAR`` reference they were saved as; a write that sends ``********`` back keeps
  the stored value;
* shapes are validated: an unknown provider or a non-http(s) ``*_url`` (the SSRF hole of
  mem0#6081) is BadInput that names it.

The saved sections are kept for OpenMemory's UI and scripts; they do not change the running
engine, whose settings come from ``config.yaml`` and the environment only.
"""

from __future__ import annotations

import copy
import re
from typing import Any
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session
from sqlalchemy.orm.attributes import flag_modified

from ..config import Settings
from ..db.database import Database
from ..db.models import ConfigEntry
from ..errors import BadInput

CONFIG_KEY = "main"
MASK = "********"
ENV_REFERENCE = "env:"

# mem0ai 2.2.1's factories (mem0/utils/factory.py), plus our own offline choices.
LLM_PROVIDERS = (
    "none", "openai", "anthropic", "ollama", "groq", "together", "aws_bedrock", "litellm", "azure_openai",
    "openai_structured", "azure_openai_structured", "gemini", "deepseek", "minimax", "xai", "sarvam",
    "lmstudio", "vllm", "langchain",
)  # fmt: skip
EMBEDDER_PROVIDERS = (
    "onnx-minilm", "openai", "ollama", "huggingface", "azure_openai", "gemini", "vertexai", "together",
    "lmstudio", "langchain", "aws_bedrock", "fastembed",
)  # fmt: skip
VECTOR_STORE_PROVIDERS = (
    "qdrant", "chroma", "pgvector", "milvus", "upstash_vector", "azure_ai_search", "azure_mysql", "pinecone",
    "mongodb", "redis", "valkey", "databricks", "elasticsearch", "vertex_ai_vector_search", "opensearch",
    "supabase", "weaviate", "faiss", "langchain", "s3_vectors", "baidu", "cassandra", "neptune",
    "turbopuffer", "oracledb",
)  # fmt: skip

#: The stock OpenMemory UI's dropdowns send each provider as its label lower-cased
#: ("azure openai", "lm studio"): saved under mem0's name, so every choice it offers that mem0
#: has is accepted. "mistral ai" has no provider in mem0 2.2.1 and stays refused.
UI_ALIASES = {
    "azure openai": "azure_openai",
    "aws bedrock": "aws_bedrock",
    "lm studio": "lmstudio",
    "hugging face": "huggingface",
    "google ai": "gemini",
}


def providers() -> dict[str, Any]:
    """What each section's ``provider`` accepts (ours first), and the UI spellings taken."""
    return {
        "llm": list(LLM_PROVIDERS),
        "embedder": list(EMBEDDER_PROVIDERS),
        "vector_store": list(VECTOR_STORE_PROVIDERS),
        "aliases": dict(UI_ALIASES),
        "ours": {"llm": "none", "embedder": "onnx-minilm", "vector_store": None},
    }


# Field names whose values are credentials; "max_tokens" is not one ("tokens" ≠ "token").
_SECRET_NAME = re.compile(
    r"(?:^|_)(?:api_key|access_key|secret_key|secret|password|token|credentials)(?:$|_)"
)


def is_secret(key: str) -> bool:
    return bool(_SECRET_NAME.search(key.lower()))


# -- schema ---------------------------------------------------------------------------------
def http_url(value: Any, key: str) -> Any:
    """Base URLs must be http(s) with a host: no file://, gopher:// or bare strings."""
    if value is None:
        return value
    parts = urlsplit(value) if isinstance(value, str) else None
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"{key} must be an http:// or https:// URL, got {value!r}")
    return value


def _check_url_keys(values: dict[str, Any]) -> None:
    for key, value in values.items():
        if key.lower().endswith("url"):
            http_url(value, key)


def _one_of(kind: str, value: str, known: tuple[str, ...]) -> str:
    value = UI_ALIASES.get(value.strip().lower(), value)
    if value not in known:
        raise ValueError(f"unknown {kind} provider {value!r}; choose one of: {', '.join(known)}")
    return value


class _ProviderConfig(BaseModel):
    """Provider-specific keys pass through (mem0 has many); the common ones are typed."""

    model_config = ConfigDict(extra="allow")

    model: str | None = Field(None, max_length=200)
    api_key: str | None = Field(None, max_length=1000, description="A key, or 'env:VAR' to read one")
    base_url: str | None = None
    ollama_base_url: str | None = None

    @model_validator(mode="after")
    def _urls(self) -> _ProviderConfig:
        _check_url_keys(self.model_dump())
        return self


class LlmConfig(_ProviderConfig):
    temperature: float | None = Field(None, ge=0, le=2)
    max_tokens: int | None = Field(None, ge=1, le=1_000_000)


class EmbedderConfig(_ProviderConfig):
    embedding_dims: int | None = Field(None, ge=8, le=8192)


class LlmSection(BaseModel):
    model_config = ConfigDict(extra="forbid")
    provider: str
    config: LlmConfig = Field(default_factory=LlmConfig)

    @field_validator("provider")
    @classmethod
    def _known(cls, value: str) -> str:
        return _one_of("LLM", value, LLM_PROVIDERS)


class EmbedderSection(BaseModel):
    model_config = ConfigDict(extra="forbid")
    provider: str
    config: EmbedderConfig = Field(default_factory=EmbedderConfig)

    @field_validator("provider")
    @classmethod
    def _known(cls, value: str) -> str:
        return _one_of("embedder", value, EMBEDDER_PROVIDERS)


class VectorStoreSection(BaseModel):
    model_config = ConfigDict(extra="forbid")
    provider: str
    config: dict[str, Any] = Field(default_factory=dict)

    @field_validator("provider")
    @classmethod
    def _known(cls, value: str) -> str:
        return _one_of("vector store", value, VECTOR_STORE_PROVIDERS)

    @field_validator("config")
    @classmethod
    def _urls(cls, value: dict[str, Any]) -> dict[str, Any]:
        _check_url_keys(value)
        return value


class OpenMemorySection(BaseModel):
    model_config = ConfigDict(extra="forbid")
    custom_instructions: str | None = Field(None, max_length=20_000)


class Mem0Section(BaseModel):
    model_config = ConfigDict(extra="forbid")
    llm: LlmSection | None = None
    embedder: EmbedderSection | None = None
    vector_store: VectorStoreSection | None = None


class ConfigDocument(BaseModel):
    model_config = ConfigDict(extra="forbid")
    openmemory: OpenMemorySection | None = None
    mem0: Mem0Section | None = None


def validate(model: type[BaseModel], data: Any, where: str) -> BaseModel:
    """``data`` as ``model``, or BadInput naming each bad field and why."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        problems = []
        for error in exc.errors():
            location = ".".join(str(part) for part in (where, *error["loc"]) if part != "")
            message = error["msg"].removeprefix("Value error, ")
            if error["type"] == "extra_forbidden":
                message = "unknown key"
            problems.append(f"{location or 'body'}: {message}")
        raise BadInput("invalid configuration: " + "; ".join(problems)) from None


def dump(section: BaseModel | None) -> dict[str, Any] | None:
    return None if section is None else section.model_dump(exclude_none=True)


# -- defaults, masking, merging (pure) --------------------------------------------------------
def default_config(settings: Settings) -> dict[str, Any]:
    """The config a fresh server has, derived from its settings. Keys from the environment
    are not copied into the database: an absent ``api_key`` means "the server's own"."""
    llm: dict[str, Any] = {"temperature": settings.llm.temperature, "max_tokens": settings.llm.max_tokens}
    if settings.llm.model:
        llm["model"] = settings.llm.model
    if settings.llm.base_url:
        llm["ollama_base_url" if settings.llm.provider == "ollama" else "base_url"] = settings.llm.base_url
    embedder: dict[str, Any] = {"model": settings.embedder.model, "embedding_dims": settings.embedder.dims}
    if settings.embedder.base_url:
        key = "ollama_base_url" if settings.embedder.provider == "ollama" else "base_url"
        embedder[key] = settings.embedder.base_url
    vector_store = None
    if settings.storage.qdrant_url:
        vector_store = {
            "provider": "qdrant",
            "config": {
                "url": settings.storage.qdrant_url,
                "collection_name": settings.storage.collection_name,
                "embedding_model_dims": settings.embedder.dims,
            },
        }
    return {
        "openmemory": {"custom_instructions": None},
        "mem0": {
            "llm": {"provider": settings.llm.provider, "config": llm},
            "embedder": {"provider": settings.embedder.provider, "config": embedder},
            "vector_store": vector_store,
        },
    }


def with_defaults(config: dict[str, Any], defaults: dict[str, Any]) -> dict[str, Any]:
    """``config`` with any missing section taken from ``defaults`` (sections are not merged)."""
    result = copy.deepcopy(config) if isinstance(config, dict) else {}
    for top in ("openmemory", "mem0"):
        if not isinstance(result.get(top), dict):
            result[top] = copy.deepcopy(defaults[top])
    result["openmemory"].setdefault("custom_instructions", None)
    for section in ("llm", "embedder"):
        if not isinstance(result["mem0"].get(section), dict):
            result["mem0"][section] = copy.deepcopy(defaults["mem0"][section])
    result["mem0"].setdefault("vector_store", copy.deepcopy(defaults["mem0"]["vector_store"]))
    return result


def mask_secrets(value: Any) -> Any:
    """A copy with every secret replaced by the mask; ``env:VAR`` references stay readable."""
    if isinstance(value, dict):
        masked = {}
        for key, item in value.items():
            if is_secret(str(key)) and item is not None and item != "":
                keep = isinstance(item, str) and item.startswith(ENV_REFERENCE)
                masked[key] = item if keep else MASK
            else:
                masked[key] = mask_secrets(item)
        return masked
    if isinstance(value, list):
        return [mask_secrets(item) for item in value]
    return value


def unmask(new: Any, stored: Any) -> Any:
    """``new`` with each masked secret swapped back for the stored value at the same place.
    A mask with nothing stored behind it means "no key" and is dropped."""
    if not isinstance(new, dict):
        return new
    old = stored if isinstance(stored, dict) else {}
    result = {}
    for key, value in new.items():
        if value == MASK and is_secret(str(key)):
            if old.get(key) not in (None, "", MASK):
                result[key] = old[key]
        else:
            result[key] = unmask(value, old.get(key))
    return result


def deep_merge(base: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    """Objects merge key by key; anything else (null included) replaces."""
    merged = copy.deepcopy(base)
    for key, value in patch.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


def normalise(config: dict[str, Any], defaults: dict[str, Any]) -> dict[str, Any]:
    """Validate a whole config and return it as stored: typed, no nulls, sections filled."""
    document = validate(ConfigDocument, config, "")
    assert isinstance(document, ConfigDocument)
    result: dict[str, Any] = {}
    if document.openmemory is not None:
        result["openmemory"] = document.openmemory.model_dump()
    if document.mem0 is not None:
        mem0 = {name: dump(getattr(document.mem0, name)) for name in ("llm", "embedder")}
        result["mem0"] = {k: v for k, v in mem0.items() if v is not None}
        result["mem0"]["vector_store"] = dump(document.mem0.vector_store)
    return with_defaults(result, defaults)


# -- storage ----------------------------------------------------------------------------------
def _row(session: Session) -> ConfigEntry | None:
    return session.scalar(select(ConfigEntry).where(ConfigEntry.key == CONFIG_KEY))


def load(database: Database, settings: Settings) -> dict[str, Any]:
    """The saved config (unmasked), creating the row from the defaults when there is none."""
    defaults = default_config(settings)
    for attempt in (1, 2):
        try:
            with database.session() as session:
                row = _row(session)
                if row is None:
                    session.add(ConfigEntry(key=CONFIG_KEY, value=defaults))
                    return copy.deepcopy(defaults)
                value = with_defaults(row.value, defaults)
                if value != row.value:
                    row.value = value
                    flag_modified(row, "value")
                return copy.deepcopy(value)
        except IntegrityError:
            # Two first reads raced to create the row; the other one won, so read it.
            if attempt == 2:
                raise
    raise AssertionError("unreachable")


def save(database: Database, config: dict[str, Any]) -> dict[str, Any]:
    with database.session() as session:
        row = _row(session)
        if row is None:
            session.add(ConfigEntry(key=CONFIG_KEY, value=copy.deepcopy(config)))
        else:
            row.value = copy.deepcopy(config)
            flag_modified(row, "value")
    return config


def _section_of(config: dict[str, Any], path: tuple[str, ...]) -> Any:
    node: Any = config
    for key in path:
        node = node.get(key) if isinstance(node, dict) else None
    return mask_secrets(node)


class SavedConfig:
    """The document as the server's callers see it: every answer has its secrets masked, and
    every write restores masked secrets from the stored document, validates and saves."""

    def __init__(self, database: Database, settings: Settings) -> None:
        self.database = database
        self.settings = settings

    def get(self) -> dict[str, Any]:
        """The saved config (created from the defaults on first read)."""
        return mask_secrets(load(self.database, self.settings))

    def replace(self, body: dict[str, Any]) -> dict[str, Any]:
        """Replace the top-level sections given (``openmemory``, ``mem0``)."""
        stored = load(self.database, self.settings)
        return mask_secrets(self._write({**stored, **body}, stored))

    def merge(self, patch: dict[str, Any]) -> dict[str, Any]:
        """Deep-merge ``patch`` into the saved config."""
        stored = load(self.database, self.settings)
        return mask_secrets(self._write(deep_merge(stored, patch), stored))

    def reset(self) -> dict[str, Any]:
        """Back to the defaults derived from the server's settings."""
        return mask_secrets(save(self.database, default_config(self.settings)))

    def section(self, path: tuple[str, ...]) -> Any:
        """The section at ``path`` (e.g. ``("mem0", "llm")``)."""
        return _section_of(load(self.database, self.settings), path)

    def replace_section(self, path: tuple[str, ...], value: Any) -> Any:
        """Replace the section at ``path`` and return it as saved."""
        stored = load(self.database, self.settings)
        updated = copy.deepcopy(stored)
        parent = updated
        for key in path[:-1]:
            parent = parent.setdefault(key, {})
        parent[path[-1]] = value
        return _section_of(self._write(updated, stored), path)

    def _write(self, config: dict[str, Any], stored: dict[str, Any]) -> dict[str, Any]:
        config = normalise(unmask(config, stored), default_config(self.settings))
        return save(self.database, config)
