"""What redaction reports: the kinds of secret and personal data, ``Finding``, ``Redaction``, the
placeholder that replaces a finding, and how overlapping spans merge into findings.

Overlapping findings merge into one span labelled with the kind of the longest of them (ties go
to the more specific kind, earlier in ``SECRET_KINDS``), so no part of a secret is left behind.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

from .scan import Span
from .token_formats import VENDOR_TOKENS


@dataclass(frozen=True)
class Finding:
    """One redacted span: ``text[start:end]`` of the original text was a ``kind``."""

    kind: str
    start: int
    end: int


@dataclass(frozen=True)
class Redaction:
    """The redacted text and what was taken out (offsets refer to the original text)."""

    text: str
    findings: tuple[Finding, ...]


# Most specific first: on a tie in length the earlier kind names the merged span.
SECRET_KINDS: tuple[str, ...] = (
    "anthropic_api_key",
    "openai_api_key",
    "aws_access_key",
    "aws_secret_key",
    "github_token",
    "slack_webhook",
    "discord_webhook",
    "teams_webhook",
    "slack_token",
    "stripe_key",
    "google_api_key",
    "sendgrid_api_key",
    *dict.fromkeys(kind for kind, _ in VENDOR_TOKENS),  # huggingface_token, npm_token, pypi_token …
    "gcp_service_account",
    "private_key",
    "jwt",
    "basic_auth",
    "url_credentials",
    "bearer_token",
    "env_secret",
    "password_assignment",
    "prose_secret",
)
PII_KINDS: tuple[str, ...] = ("credit_card", "email", "phone", "ip_address")
KINDS: frozenset[str] = frozenset(SECRET_KINDS + PII_KINDS)
_RANK = {kind: rank for rank, kind in enumerate(SECRET_KINDS + PII_KINDS)}

PLACEHOLDER = re.compile(r"\[REDACTED:[a-z0-9_]{1,40}\]")  # what replaces a finding; never matched again


def merge(spans: list[Span], protected: list[tuple[int, int]]) -> list[Finding]:
    """Union of overlapping spans, each named after its longest member; placeholders untouched."""
    protected_ends = [end for _, end in protected]
    merged: list[Finding] = []
    group_kind, group_start, group_end, best = "", 0, 0, (0, 0)
    for kind, start, end in sorted(spans, key=lambda span: (span[1], span[2])):
        index = bisect.bisect_right(protected_ends, start)
        if end <= start or (index < len(protected) and protected[index][0] < end):
            continue  # empty, or it would cut into a placeholder
        score = (end - start, -_RANK[kind])
        if start < group_end:
            group_end = max(group_end, end)
            if score > best:
                group_kind, best = kind, score
            continue
        if group_kind:
            merged.append(Finding(group_kind, group_start, group_end))
        group_kind, group_start, group_end, best = kind, start, end, score
    if group_kind:
        merged.append(Finding(group_kind, group_start, group_end))
    return merged
