"""The policy gate: the one function every write passes before any store sees its data.

    admit(write, policy, facts) -> Admitted      (pure; raises TooLarge / BadInput / Denied)

:func:`prepare` is its first half, which needs no facts (the checks of the write itself, the
size cap and redaction): a writer may run it first to know the text that will be stored (and
start embedding it) while it reads the facts, then pass it to ``admit``.

In order: size caps (per memory, per memory-tool file; per-user quota), redaction of secrets
(always) and PII (by config) in the text and the metadata, the consent decision, the retention
date, and the hash that de-duplication compares. The engine accepts only an :class:`Admitted`, and only this
module can make one, so a write path that skips the gate cannot reach a store.
"""

from __future__ import annotations

import fnmatch
import hashlib
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Literal

from ..errors import BadInput, Forbidden, TooLarge
from .memory_paths import memory_path
from .redact import redact, redact_value

Channel = Literal["mcp", "rest", "capture", "import", "ui", "memory_tool"]
CHANNELS: frozenset[str] = frozenset({"mcp", "rest", "capture", "import", "ui", "memory_tool", "team"})
#: Channels whose writes the user (or the model at their request) made on purpose.
EXPLICIT_CHANNELS = frozenset({"mcp", "rest", "ui", "memory_tool", "team"})
TRUNCATION_MARKER = "\n[…truncated by claude-code-memory: over the size cap]"


class Denied(Forbidden):
    """A standing consent rule denies this capture: nothing is stored."""

    code = "consent_denied"


@dataclass(frozen=True)
class Write:
    """A write as it arrives, before policy."""

    user_id: str
    app: str
    text: str
    channel: str
    metadata: dict[str, Any] = field(default_factory=dict)
    project: str | None = None
    conversation_id: str | None = None
    model: str | None = None
    captured_at: datetime | None = None
    #: Secrets already masked before the write arrived (the capture proxy redacts what it
    #: sends): the text holds only their markers, so the gate cannot count them itself.
    redacted_upstream: int = 0
    #: The task (within ``project``) the memory belongs to; None: the whole project.
    task: str | None = None
    #: The working directory a capture came from, when ``project`` is the name made of it:
    #: consent rules match this path (their patterns are paths) instead of the name.
    origin: str | None = None
    #: A memory-tool file's canonical path (``policy.memory_paths``); part of its identity.
    path: str | None = None


@dataclass(frozen=True)
class Rule:
    id: Any
    app_pattern: str
    project_pattern: str
    effect: Literal["allow", "deny"]

    def matches(self, app: str, project: str | None) -> bool:
        return fnmatch.fnmatchcase(app, self.app_pattern) and fnmatch.fnmatchcase(
            project or "", self.project_pattern
        )


@dataclass(frozen=True)
class Policy:
    require_consent: bool
    consent_channels: frozenset[str]
    max_chars: int
    quota_bytes: int
    oversize: Literal["truncate", "reject"]
    mask_pii: bool
    retention_days: int
    max_file_bytes: int = 100_000

    @classmethod
    def from_settings(cls, settings: Any) -> Policy:
        return cls(
            require_consent=settings.privacy.require_consent,
            consent_channels=frozenset(settings.privacy.consent_channels),
            max_chars=settings.performance.max_memory_chars,
            quota_bytes=int(settings.performance.max_memory_size_mb * 1024 * 1024),
            oversize=settings.performance.capture_oversize,
            mask_pii=settings.privacy.mask_pii,
            retention_days=settings.privacy.auto_delete_after_days,
            max_file_bytes=settings.memory_tool.max_file_bytes,
        )


@dataclass(frozen=True)
class Facts:
    """What the stores know that the decision needs, looked up by the caller."""

    now: datetime
    used_bytes: int = 0
    rules: tuple[Rule, ...] = ()


_GATE = object()


@dataclass(frozen=True)
class Admitted:
    """A write the gate let through, as it may be stored. Made only by :func:`admit`."""

    write: Write
    text: str
    metadata: dict[str, Any]
    redactions: int
    truncated: bool
    state: Literal["active", "pending"]
    consent: str
    rule_id: Any
    expires_at: datetime | None
    content_hash: str
    _token: object = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self._token is not _GATE:
            raise TypeError("only policy.gate.admit() makes an Admitted write")


def content_hash(text: str, path: str | None = None) -> str:
    """Hash of the normalised text: case and whitespace do not make a new memory. A memory-tool
    file's path is part of it: two files may say the same thing, and neither is a duplicate of
    a memory written elsewhere."""
    normalised = " ".join(text.split()).casefold()
    if path is not None:
        normalised = f"{path}\0{normalised}"
    return hashlib.sha256(normalised.encode("utf-8")).hexdigest()


def check_path(path: str) -> None:
    """A memory-tool file's path as it may be stored: canonical (``policy.memory_paths``) and
    free of secrets, which are masked in text but would be a file's name here."""
    if memory_path(path) != path:
        raise BadInput(f"a memory file's path must be canonical, not {path!r}")
    if redact(path).findings:
        raise BadInput(f"The path {path} looks like it holds a secret; name the file differently")


def _cap(write: Write, policy: Policy) -> tuple[str, bool]:
    text = write.text
    if write.path is not None:
        check_path(write.path)
        size = len(text.encode("utf-8"))
        if size > policy.max_file_bytes:
            raise TooLarge(
                f"File {write.path} would be {size} bytes; the maximum is {policy.max_file_bytes} "
                "(memory_tool.max_file_bytes)"
            )
    if len(text) <= policy.max_chars:
        return text, False
    if write.channel == "capture" and policy.oversize == "truncate":
        keep = max(0, policy.max_chars - len(TRUNCATION_MARKER))
        return text[:keep] + TRUNCATION_MARKER, True
    raise TooLarge(
        f"memory is {len(text)} characters; the maximum is {policy.max_chars} (performance.max_memory_chars)"
    )


def asks_consent(write: Write, policy: Policy) -> bool:
    """Whether consent decides this write: it may then wait in the queue, unembedded."""
    return policy.require_consent and write.channel in policy.consent_channels


def _consent(write: Write, policy: Policy, facts: Facts) -> tuple[Literal["active", "pending"], str, Any]:
    if not asks_consent(write, policy):
        return "active", "explicit" if write.channel in EXPLICIT_CHANNELS else "not_required", None
    for rule in facts.rules:  # the caller orders rules: deny rules first
        # A rule may name the project or, for a capture, the path it came from.
        if rule.matches(write.app, write.project) or (write.origin and rule.matches(write.app, write.origin)):
            if rule.effect == "deny":
                raise Denied(f"a consent rule denies storing captures from {write.app!r} / {write.project!r}")
            return "active", "rule", rule.id
    return "pending", "pending", None


@dataclass(frozen=True)
class Prepared:
    """A write's text and metadata as the gate stores them (capped, redacted), before the
    facts decide whether it may be stored. Made by :func:`prepare`."""

    write: Write
    text: str
    metadata: dict[str, Any]
    findings: int
    truncated: bool


def prepare(write: Write, policy: Policy) -> Prepared:
    """The part of :func:`admit` that needs no facts: the write's own checks, the size cap and
    redaction. Pure; raises TooLarge / BadInput."""
    if write.channel not in CHANNELS:
        raise BadInput(f"unknown channel {write.channel!r}")
    if not isinstance(write.text, str) or not write.text.strip():
        raise BadInput("text must be a non-empty string")
    if write.redacted_upstream < 0:
        raise BadInput(f"redacted_upstream must not be negative, not {write.redacted_upstream}")
    capped, truncated = _cap(write, policy)
    redaction = redact(capped, pii=policy.mask_pii)
    metadata, metadata_hits = redact_value(dict(write.metadata or {}), pii=policy.mask_pii)
    return Prepared(write, redaction.text, metadata, len(redaction.findings) + metadata_hits, truncated)


def admit(write: Write, policy: Policy, facts: Facts, prepared: Prepared | None = None) -> Admitted:
    """``prepared``: :func:`prepare` of this write under this policy, when the caller ran it."""
    if prepared is None or prepared.write is not write:
        prepared = prepare(write, policy)
    text, metadata = prepared.text, prepared.metadata
    size = len(text.encode("utf-8"))
    if facts.used_bytes + size > policy.quota_bytes:
        raise TooLarge(
            f"storing this memory would exceed the user's quota of {policy.quota_bytes // (1024 * 1024)} MB "
            "(performance.max_memory_size_mb); delete memories or raise the quota"
        )
    state, consent, rule_id = _consent(write, policy, facts)
    expires_at = facts.now + timedelta(days=policy.retention_days) if policy.retention_days else None
    return Admitted(
        write=write,
        text=text,
        metadata=metadata,
        redactions=write.redacted_upstream + prepared.findings,
        truncated=prepared.truncated,
        state=state,
        consent=consent,
        rule_id=rule_id,
        expires_at=expires_at,
        content_hash=content_hash(text, write.path),
        _token=_GATE,
    )


def approved(admitted: Admitted, *, edited: bool) -> Admitted:
    """The same admitted write, marked as approved by its owner (a consent decision)."""
    return Admitted(
        **{**admitted.__dict__, "consent": "approved_edited" if edited else "approved", "_token": _GATE}
    )
