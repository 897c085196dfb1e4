"""Passwords stated in Japanese, Chinese, Korean and Russian: "パスワードは…", "密码是…",
"비밀번호는 …", "пароль — …". The label is followed by a particle or a dash and the value is the
run of Latin characters that follows, since a password is typed on a Latin keyboard and the
sentence around it is not. The labels and particles are in ``languages.py``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from . import languages
from .prose_values import CLAUSE_END, PROSE_TRAILING, stated_password, with_bangs
from .scan import Span, label_scan

_SCRIPT_LABEL = label_scan(languages.SCRIPT_LABELS, "(?![а-яёА-ЯЁ]|화|学|學)")
_SCRIPT_BRIDGE_REACH = 24
_SCRIPT_QUOTES = " \t\u3000「『“\"'`«"
_SCRIPT_VALUE = re.compile(r"[:=]?[ \t]*[\"'`]?(?P<value>[!-~]{1,128})")
_SCRIPT_CLAUSE_STOPS = frozenset("。、，,.！!？?；;\n")


def script_passwords(text: str) -> Iterator[Span]:
    for label in _SCRIPT_LABEL.finditer(text):
        end = label.end()
        limit = min(len(text), end + _SCRIPT_BRIDGE_REACH)
        position = end
        while position < limit and not ("!" <= text[position] <= "~") and text[position] != "\n":
            position += 1
        if position == limit or text[position] == "\n":
            continue
        bridge = text[end:position]
        if not _SCRIPT_CLAUSE_STOPS.isdisjoint(bridge) or not languages.SCRIPT_OBJECT_MARKERS.isdisjoint(
            bridge
        ):
            continue  # another clause, or the password as the object of a verb: "パスワードを忘れた場合は…"
        joined = bridge.strip(_SCRIPT_QUOTES)
        colon = text[position] in ":="
        connected = colon or joined.endswith(languages.SCRIPT_CONNECTORS)
        if joined and not connected:
            continue  # "Пароль хранится в виде хеша …", "密码使用 …": a sentence about the password
        value_match = _SCRIPT_VALUE.match(text, position)
        if value_match is None:
            continue
        value = value_match.group("value").rstrip(PROSE_TRAILING + "`")
        start = value_match.start("value")
        # "パスワードはXです": the script ends the value; a bare "пароль X" must end its clause
        ends_clause = connected or CLAUSE_END.match(text, start + len(value)) is not None
        if stated_password(value, ends_clause):
            yield "prose_secret", start, with_bangs(text, start + len(value))
