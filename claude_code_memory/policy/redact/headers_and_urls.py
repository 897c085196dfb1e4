"""Credentials in HTTP authorization headers (``Authorization: Basic …``, ``Bearer …``,
``Authorization: token …``) and in URLs (``scheme://user:password@host``: postgres, mysql,
mongodb+srv, redis, amqp, https …).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from .placeholders import is_placeholder, looks_random
from .rules import Rule
from .scan import WORD, Span

HEADER_RULES: tuple[Rule, ...] = (
    Rule(
        "basic_auth",
        re.compile(
            r"[Aa](?i:uthorization)[\"']?[ \t]*[:=][ \t]*[\"']?(?i:basic)[ \t]+"
            r"(?P<s>[A-Za-z0-9+/]{8,2048}={0,2})"
        ),
        not_after=WORD,
    ),
    Rule(
        "bearer_token",
        re.compile(r"[Bb](?i:earer)(?:[ \t]*[:=][ \t]*|[ \t]+)(?P<s>[A-Za-z0-9._~+/-]{16,8192}=*)"),
        looks_random,
        WORD,
    ),
    Rule(
        "bearer_token",
        re.compile(
            r"[Aa](?i:uthorization)[\"']?[ \t]*[:=][ \t]*[\"']?(?i:token)[ \t]+"
            r"(?P<s>[A-Za-z0-9._~+/-]{16,8192}=*)"
        ),
        looks_random,
        WORD,
    ),
)

_SCHEME_BEFORE = re.compile(r"[A-Za-z][A-Za-z0-9+.-]{0,30}\Z")
_URL_CREDENTIALS = re.compile(r"://[^\s:/?#@\[\]\"'<>]{0,128}:(?P<s>[^\s/?#\"'<>]{1,256})@(?=[A-Za-z0-9\[])")


def url_credentials(text: str) -> Iterator[Span]:
    """``scheme://user:password@host`` (postgres, mysql, mongodb+srv, redis, amqp, https …)."""
    for match in _URL_CREDENTIALS.finditer(text):
        password = match.group("s")
        if (
            len(password) >= 3
            and not is_placeholder(password)
            and _SCHEME_BEFORE.search(text, max(0, match.start() - 31), match.start())
        ):
            yield "url_credentials", match.start("s"), match.end("s")
