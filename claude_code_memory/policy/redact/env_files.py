"""Secrets in environment files and variable dumps: ``DB_PASSWORD=…``, ``STRIPE_KEY: …``, also
inside a JSON string (``"…\\nAPI_TOKEN=…"``). The variable's name decides: a strong name
(``*_PASSWORD``, ``*_TOKEN``, ``API_KEY``) takes any real value, a weak one (``*_KEY``,
``*_AUTH``) only a value that looks like a token.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from .names import CODE_WORDS, IDENTIFIER_PATH, env_name_strength
from .placeholders import HOST, NUMBER_OR_DURATION, is_path_or_url, is_placeholder, looks_random
from .scan import WORD, Span

_ENV_VALUE = r"(?:=|: )(?P<value>\"[^\"\n]{0,1024}\"|'[^'\n]{0,1024}'|[^\s\"'`\\]{1,1024})"
_ENV_LINES = (
    # the lookbehind after the first letter keeps the fast scan for [A-Z] and stops mid-name starts
    re.compile(r"(?P<name>[A-Z](?<![A-Za-z0-9_][A-Z])[A-Z0-9_]{1,80})" + _ENV_VALUE),
    re.compile(r"\\[nt](?P<name>[A-Z][A-Z0-9_]{1,80})" + _ENV_VALUE),  # inside JSON: "…\nDB_PASSWORD=…"
)
_ENV_NOT_AFTER = WORD | set("$.{-")


def env_secrets(text: str) -> Iterator[Span]:
    matches = [match for pattern in _ENV_LINES for match in pattern.finditer(text)]
    for match in matches:
        name_start = match.start("name")
        escaped = text[name_start - 2 : name_start] in ("\\n", "\\t")  # inside a JSON string
        if name_start and text[name_start - 1] in _ENV_NOT_AFTER and not escaped:
            continue
        strength = env_name_strength(match.group("name"))
        if strength is None:
            continue
        raw = match.group("value")
        quoted = raw[:1] in "\"'"
        value = raw[1:-1] if quoted else raw
        if (
            len(value) < 4
            or is_placeholder(value)
            or is_path_or_url(value)
            or HOST.fullmatch(value)
            or NUMBER_OR_DURATION.fullmatch(value)
            or IDENTIFIER_PATH.fullmatch(value)
            or value.lower() in CODE_WORDS
            or (strength == "weak" and not (len(value) >= 16 and looks_random(value)))
        ):
            continue
        start, end = match.span("value")
        yield "env_secret", start + quoted, end - quoted
