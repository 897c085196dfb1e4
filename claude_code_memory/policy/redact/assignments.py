"""Secrets assigned to a name in code and configuration: ``password=…``, ``"api_key": "…"``,
``DB_PASSWORD: …``, ``--client-secret …``, ``<password>…</password>``,
``define('DB_PASSWORD', '…')``, and ``~/.netrc``'s ``machine … login … password …``.

The scan looks for the word (password, secret, token, key …) and then reads around it: the
name it ends, the separator, the value. In code, variables and calls (``password=password``,
``token = get_token()``) are left alone.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from .names import (
    CODE_WORDS,
    CURSOR_BEFORE,
    IDENTIFIER_PATH,
    KEY_QUALIFIERS,
    KEYWORD_INSIDE,
    MULTIWORD_IDENTIFIER,
    name_words,
)
from .placeholders import NUMBER_OR_DURATION, is_path_or_url, is_placeholder, looks_random
from .rules import Rule
from .scan import WORD, Span, words

NETRC = Rule(
    "password_assignment",  # ~/.netrc
    re.compile(r"machine[ \t]+\S{1,200}[ \t]+login[ \t]+\S{1,200}[ \t]+password[ \t]+(?P<s>\S{1,256})"),
    not_after=WORD,
)

# password=…, "api_key": "…", DB_PASSWORD: …, --client-secret …, <password>…</password>.
# The scan looks for the word (password, secret, token, key …) and then reads around it.
_SECRET_WORD_SCAN = re.compile(
    r"[PpSsTtKkCc](?i:ass(?:word|wd|phrase)?|wd|ecret(?:_key_base)?|oken|ey|redentials?)(?![A-Za-z0-9_])"
)
_SECRET_WORDS = words(
    "pass password passwd passphrase pwd secret secret_key_base token key credential credentials"
)
_PASSWORD_WORDS = ("pass", "pwd", "secret")
# Joined onto the word without a separator: apitoken, dbpassword, authtoken, requirepass.
_JOINED_PREFIXES = tuple(
    words(
        "access refresh auth api bearer session app bot client db admin root master user private signing "
        "encryption license id oauth require"
    )
)
_ASSIGNMENT_TAIL = re.compile(
    r"(?P<close>\\?[\"'`]?\]?)"  # "password": / ['password'] =
    r"(?:(?P<sep>[ \t]{0,4}(?::=|=>|->|=(?!=)|:(?![:/\\]))[ \t]{0,4})|(?P<tag>>)|(?P<flag>[ \t]+)"
    r"|(?P<comma>[ \t]{0,4},[ \t]{0,16}))"  # define('DB_PASSWORD', '…'), headers.set("x-api-key", "…")
    r"(?P<value>\\?\"[^\"\n]{0,512}?\\?\"|\\?'[^'\n]{0,512}?\\?'|`[^`\n]{0,512}`"
    r"|[^\s\"'`,;&<>(){}\[\]\\]{1,512})"
)
_FLAG_HEAD = re.compile(r"(?:^|\s)-{1,2}[A-Za-z0-9_-]{0,40}\Z")
_IDENTIFIER = re.compile(r"[A-Za-z_]\w*")
_WORD_WITH_NUMBER = re.compile(r"[a-z]+\d*")
_REFERENCE_WORDS = words(
    "password passwd pass pwd passphrase secret token key apikey credential credentials auth"
)


def _starts_a_word(text: str, position: int) -> bool:
    """At a word start, after an escaped ``\\n``/``\\t``, or at a camelCase hump."""
    if position == 0 or not text[position - 1].isalpha() or text[position - 2 : position] in ("\\n", "\\t"):
        return True
    return text[position].isupper() and (text[position - 1].islower() or text[position - 1].isdigit())


def _secret_key_start(text: str, start: int, word: str) -> int | None:
    """Where the name ending in ``word`` begins (``api_key``, ``dbpassword``), if it is one."""
    before = text[max(0, start - 13) : start].lower()
    if word == "key":
        qualified = before[:-1] if before.endswith(("_", ".", "-")) else before
        for qualifier in KEY_QUALIFIERS:
            if qualified.endswith(qualifier):
                qualifier_start = start - (len(before) - len(qualified)) - len(qualifier)
                return qualifier_start if _starts_a_word(text, qualifier_start) else None
        return None
    if before.endswith(_JOINED_PREFIXES):
        for prefix in _JOINED_PREFIXES:
            if before.endswith(prefix) and _starts_a_word(text, start - len(prefix)):
                return start - len(prefix)
    return start if _starts_a_word(text, start) else None


def _reads_as_prose(text: str, key_start: int, tail: re.Match[str]) -> bool:
    """``key: value`` that is not alone on its line, as in YAML, reads as a sentence."""
    line_start = text.rfind("\n", max(0, key_start - 200), key_start) + 1
    if (line_start == 0 and key_start > 200) or text[line_start:key_start].strip(" \t-\"'"):
        return True
    line_end = text.find("\n", tail.end(), tail.end() + 200)
    rest = text[tail.end() : tail.end() + 200 if line_end < 0 else line_end]
    return bool(rest.partition(" #")[0].strip(" \t,;\r"))


def _names_a_variable(value: str) -> bool:
    """``access_token``, ``dbPassword``, ``SECRET_KEY``, ``getpass``: an identifier, not a token."""
    words = name_words(value)
    if not all(_WORD_WITH_NUMBER.fullmatch(word) for word in words):
        return False  # digits inside a word (b9a, x7k): random characters
    if MULTIWORD_IDENTIFIER.fullmatch(value) or _REFERENCE_WORDS.intersection(words):
        return True
    return not any(c.isdigit() for c in value) and KEYWORD_INSIDE.search(value) is not None


def _assignment_value_is_secret(text: str, key_start: int, tail: re.Match[str], strength: str) -> bool:
    raw = tail.group("value")
    quoted = raw[:1] in "\"'`" or raw[:2] in ('\\"', "\\'")
    value = raw.strip("\\\"'`") if quoted else raw
    if is_placeholder(value) or is_path_or_url(value):
        return False
    if quoted and re.search(r"\s", value):
        # A passphrase may have spaces; a label ("Enter your password") has no digit.
        return strength == "password" and len(value) >= 8 and any(c.isdigit() for c in value)
    if not quoted:
        following = text[tail.end() : tail.end() + 1]
        if following in ("(", "[", "{") or IDENTIFIER_PATH.fullmatch(value):
            return False  # a call, an index, an attribute: code, not a literal
        if value.rstrip("!?;").lower() in CODE_WORDS:
            return False  # a type: "password: string;", "secret: String!"
        if _IDENTIFIER.fullmatch(value) and _names_a_variable(value):
            return False  # password=password, token=access_token, secret=SECRET_KEY, pw=getpass
        if NUMBER_OR_DURATION.fullmatch(value):
            return False
        if tail.group("sep") and ":" in tail.group("sep") and _reads_as_prose(text, key_start, tail):
            strength = "token"  # "login failed: password: incorrect" is prose, not YAML
    if strength == "token":
        return len(value) >= 8 and not NUMBER_OR_DURATION.fullmatch(value) and looks_random(value)
    return len(value) >= 4


def _name_start(text: str, position: int) -> int:
    """Start of the identifier (``DB_PASSWORD``, ``x-api-key``, ``--requirepass``) around ``position``."""
    limit = max(0, position - 64)
    while position > limit and (text[position - 1].isalnum() or text[position - 1] in "_.-"):
        position -= 1
    return position


def assignments(text: str) -> Iterator[Span]:
    examined_until = 0
    for word_match in _SECRET_WORD_SCAN.finditer(text):
        start, end = word_match.span()
        if start < examined_until:
            continue  # inside a value already looked at, as in password=password=…
        word = word_match.group().lower()
        tail = _ASSIGNMENT_TAIL.match(text, end) if word in _SECRET_WORDS else None
        if tail is None or (tail.group("flag") is not None and "-" not in text[max(0, start - 24) : start]):
            continue
        key_start = _secret_key_start(text, start, word)
        if key_start is None:
            continue
        if tail.group("flag") is not None and (
            tail.group("close") or not _FLAG_HEAD.search(text, max(0, key_start - 48), key_start)
        ):
            continue  # "--password hunter2" is a flag; "password hunter2" is prose
        if tail.group("tag") is not None and not text.endswith("<", 0, key_start):
            continue
        if tail.group("comma") is not None and not (
            text[_name_start(text, key_start) - 1 : key_start].startswith(("'", '"'))
            and tail.group("close").strip("\\]")
            and tail.group("value")[:1] in "\"'\\"
        ):
            continue  # only a quoted name followed by a quoted value: f("password", "…")
        if word == "token" and CURSOR_BEFORE.search(text, max(0, start - 16), start):
            continue  # nextPageToken, continuation_token: a cursor, not a credential
        examined_until = tail.end()
        key = text[key_start:end].lower()
        strength = "password" if any(part in key for part in _PASSWORD_WORDS) else "token"
        if tail.group("comma") is not None:
            strength = "token"  # a list of names ("password", "token") is no assignment
        if not _assignment_value_is_secret(text, key_start, tail, strength):
            continue
        value_start, value_end = tail.span("value")
        raw = tail.group("value")
        if raw[:1] in "\"'`" or raw[:2] in ('\\"', "\\'"):
            value_start += 2 if raw[0] == "\\" else 1
            value_end -= 2 if raw[-2:-1] == "\\" else 1
        if value_end > value_start:
            yield "password_assignment", value_start, value_end
