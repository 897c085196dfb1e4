"""Private keys: PEM blocks (whole, or cut short), PEM base64-encoded (kubeconfig's
``client-key-data``, Kubernetes Secrets) and a Google Cloud service account's JSON
(``private_key_id``, ``private_key``).
"""

from __future__ import annotations

import base64
import bisect
import re
from collections.abc import Iterator

from .rules import Rule
from .scan import BASE64_CHARS, Span

SERVICE_ACCOUNT_RULES: tuple[Rule, ...] = (
    Rule(
        "gcp_service_account",
        re.compile(r"\"private_key_id\\?\"[ \t]*:[ \t]*\\?\"(?P<s>[0-9a-f]{40})\\?\""),
    ),
    Rule(
        "gcp_service_account",
        re.compile(
            r"\"private_key\\?\"[ \t]*:[ \t]*\\?\"(?P<s>-----BEGIN PRIVATE[ ]KEY-----[^\"]{0,12000}?"
            r"-----END PRIVATE[ ]KEY-----(?:\\\\?n)?)"
        ),
    ),
)

_PEM_BEGIN = re.compile(r"-----BEGIN (?:[A-Z0-9]+ ){0,4}PRIVATE[ ]KEY(?: BLOCK)?-----")
_PEM_END = re.compile(r"-----END (?:[A-Z0-9]+ ){0,4}PRIVATE[ ]KEY(?: BLOCK)?-----")
# A block cut short (pasted halfway, truncated log): its base64 lines, real or escaped newlines.
_PEM_BODY = re.compile(
    r"(?:(?:\r?\n|\\r?\\n)[ \t]*(?:[A-Za-z0-9+/=]{8,100}|[A-Za-z-]{2,20}: [^\r\n\\]{0,200})?[ \t]*"
    r"(?=\r?\n|\\r?\\n|\Z|[\"']))*"
)
_PEM_MAX_BODY = 65536


def private_keys(text: str) -> Iterator[Span]:
    begins = list(_PEM_BEGIN.finditer(text))
    if not begins:
        return
    ends = [match.end() for match in _PEM_END.finditer(text)]
    covered = -1
    for begin in begins:
        if begin.start() < covered:
            continue
        index = bisect.bisect_left(ends, begin.end())
        if index < len(ends) and ends[index] - begin.end() <= _PEM_MAX_BODY:
            end = ends[index]
        else:
            end = _PEM_BODY.match(text, begin.end()).end()  # type: ignore[union-attr]  # matches ""
        covered = end
        yield "private_key", begin.start(), end


# "-----BEGIN" base64-encoded, as in kubeconfig's client-key-data and Kubernetes Secret data.
_BASE64_PEM = re.compile(r"LS0tLS1CRUdJTi[A-Za-z0-9+/]{60,16384}={0,2}")


def base64_private_keys(text: str) -> Iterator[Span]:
    for match in _BASE64_PEM.finditer(text):
        if match.start() and text[match.start() - 1] in BASE64_CHARS:
            continue
        head = match.group()[:64]
        if b"PRIVATE" in base64.b64decode(head, validate=False):
            yield "private_key", match.start(), match.end()
