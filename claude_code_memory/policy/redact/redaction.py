"""The entry points: ``redact`` runs every detector over a text and replaces what they find by
placeholders; ``redact_value`` does the same for every string inside a metadata structure.
"""

from __future__ import annotations

from typing import Any

from .assignments import NETRC, assignments
from .aws import AWS_KEY_ID, aws_secret_keys, aws_secrets_beside_key_ids, aws_secrets_in_prose
from .command_options import COMMAND_OPTIONS
from .env_files import env_secrets
from .findings import PLACEHOLDER, Redaction, merge
from .headers_and_urls import HEADER_RULES, url_credentials
from .names import secret_name_strength
from .personal_data import cards, emails, ip_addresses, phones
from .placeholders import is_path_or_url, is_placeholder, looks_random
from .private_keys import SERVICE_ACCOUNT_RULES, base64_private_keys, private_keys
from .prose import prose_secrets
from .prose_scripts import script_passwords
from .scan import Detector
from .tokens import TOKEN_RULES

_SECRET_DETECTORS: tuple[Detector, ...] = (
    *TOKEN_RULES,
    AWS_KEY_ID,
    *SERVICE_ACCOUNT_RULES,
    *HEADER_RULES,
    NETRC,
    *COMMAND_OPTIONS,
    aws_secret_keys,
    url_credentials,
    private_keys,
    base64_private_keys,
    aws_secrets_beside_key_ids,
    aws_secrets_in_prose,
    env_secrets,
    assignments,
    prose_secrets,
    script_passwords,
)
_PII_DETECTORS: tuple[Detector, ...] = (cards, emails, phones, ip_addresses)


def redact(text: str, *, pii: bool = False) -> Redaction:
    """Replace every secret (and, with ``pii``, personal data) by ``[REDACTED:<kind>]``."""
    if not text:
        return Redaction(text, ())
    detectors = _SECRET_DETECTORS + _PII_DETECTORS if pii else _SECRET_DETECTORS
    spans = [span for detector in detectors for span in detector(text)]
    if not spans:
        return Redaction(text, ())
    protected = [match.span() for match in PLACEHOLDER.finditer(text)]
    findings = merge(spans, protected)
    pieces, position = [], 0
    for finding in findings:
        pieces += [text[position : finding.start], f"[REDACTED:{finding.kind}]"]
        position = finding.end
    pieces.append(text[position:])
    return Redaction("".join(pieces), tuple(findings))


def redact_value(value: Any, *, pii: bool = False) -> tuple[Any, int]:
    """Redact every string inside ``value`` (dicts, lists, tuples); return it and the count.

    A string under a key that names a secret (``password``, ``api_key``, ``DB_TOKEN`` …) is
    redacted whole when it looks like a real value, since it has no ``key=`` of its own to give
    it away. Keys themselves and non-string leaves are kept as they are.
    """
    if isinstance(value, str):
        result = redact(value, pii=pii)
        return result.text, len(result.findings)
    if isinstance(value, dict):
        redacted: dict[Any, Any] = {}
        total = 0
        for key, item in value.items():
            redacted[key], count = redact_value(item, pii=pii)
            if (
                not count
                and isinstance(key, str)
                and isinstance(item, str)
                and _is_secret_under_name(key, item)
            ):
                redacted[key], count = "[REDACTED:password_assignment]", 1
            total += count
        return redacted, total
    if isinstance(value, (list, tuple)):
        items, counts = [], 0
        for item in value:
            new_item, count = redact_value(item, pii=pii)
            items.append(new_item)
            counts += count
        return (items if isinstance(value, list) else tuple(items)), counts
    return value, 0


def _is_secret_under_name(name: str, value: str) -> bool:
    strength = secret_name_strength(name)
    if strength is None or is_placeholder(value) or is_path_or_url(value):
        return False
    if strength == "token":
        return len(value) >= 8 and looks_random(value)
    return len(value) >= 4
