"""Credentials named in prose, in languages written with spaces between words.

"btw the password is hunter2correct", "the datadog api key is 0c46…", "the vault unseal phrase
for prod is correct horse battery staple", "das Kennwort für den Server lautet …": a label, a few
words, "is"/"was"/":"/"=", the value. The label stays and the value goes. Prose uses the same
words about credentials rather than with one ("the token is valid for 15 minutes", "the secret
is to keep batches small"), so the value must look like what its label names
(``prose_values.py``). The words of each language are in ``languages.py``.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterator

from . import languages
from .names import CURSOR_BEFORE
from .placeholders import is_placeholder
from .prose_values import CLAUSE_END, PROSE_TRAILING, prose_phrase, prose_token, stated_password, with_bangs
from .scan import WORD_DASH, Span, label_scan, words

# The scan looks for the noun (password, phrase, key, token …), then reads the qualifier before it.
# A text that holds a label of another language (Passwort, mot de passe …) is scanned for those
# too; the others, most texts, skip the longer scan.
_PROSE_NOUNS = words("password passwd passcode passphrase pwd pw phrase key token secret words")
_PROSE_NOUN = label_scan(_PROSE_NOUNS, r"(?![\w-])")
_PROSE_NOUN_ANY_LANGUAGE = label_scan(_PROSE_NOUNS | languages.PASSWORD_LABELS, r"(?![\w-])")


def _prose_nouns(text: str) -> Iterator[re.Match[str]]:
    lowered = text.lower()
    foreign = any(label in lowered for label in languages.PASSWORD_LABELS)
    return (_PROSE_NOUN_ANY_LANGUAGE if foreign else _PROSE_NOUN).finditer(text)


_PROSE_QUALIFIERS = {
    "phrase": re.compile(r"(?i)(?:pass|unseal|seed|recovery|mnemonic)[ -]?\Z"),
    "words": re.compile(r"(?i)(?:seed|recovery|mnemonic)[ -]\Z"),
    "key": re.compile(r"(?i)(?:api|access|secret|auth|license|client|signing|master|unseal|root)[ _-]?\Z"),
}


_PROSE_NOT_AFTER = WORD_DASH | set(".$/@{")
_PROSE_WORD = r"[\w'’/-]{1,24}(?:\.[\w'’/-]{1,24}){0,3}"
_PROSE_VERB = "(?i:" + "|".join(sorted(languages.VERBS, key=len, reverse=True)) + ")"
_PROSE_TAIL = re.compile(
    # at most six words between the label and the verb: "for prod", "I set for the admin user"
    rf"(?P<bridge>(?:[ \t]+(?!{_PROSE_VERB}:?[ \t])(?:{_PROSE_WORD})){{0,6}}?)"
    rf"(?:[ \t]+{_PROSE_VERB}:?"
    r"(?:[ \t]+(?i:now|still|just|actually|currently|(?:set|changed|reset)[ \t]+to))?[ \t]+"
    r"|[ \t]*(?::|=|→|->|=>)[ \t]+)"  # "key=value" with no space is code or a query: assignments.py
    r"(?P<value>\"[^\"\n]{1,200}\"|'[^'\n]{1,200}'|`[^`\n]{1,200}`|“[^”\n]{1,200}”|«[^»\n]{1,200}»"
    r"|„[^“”\n]{1,200}[“”]|[^\s\"'`“«„]{1,256})"
)
_PROSE_QUOTES = "\"'`“«„"
_PROSE_REACH = 6 * 26 + 12  # six bridge words and the verb
_VERB_LETTERS = "".join(
    sorted({verb[0] for verb in languages.VERBS} | {verb[0].upper() for verb in languages.VERBS})
)
# the verbs' first letters as a lookahead first: most spaces are followed by none of them
_PROSE_CONNECTOR = re.compile(
    rf"[ \t:=→>](?:(?<=[ \t])(?=[{_VERB_LETTERS}]){_PROSE_VERB}:?[ \t]|(?<=[:=→>])[ \t])"
)
# What may come between the label and its verb: a qualifier ("for prod", "of the staging db"),
# a clause ("I set", "you gave me", "that works") or an adverb. "the password manager is …",
# "the token limit is …", "the secret name is …" describe something else.
_PROSE_BRIDGE_OPENERS = languages.BRIDGE_OPENERS | words(
    "for of to on in at from with we i you they he she that which here now currently still again today"
)


def _prose_label(text: str, noun: re.Match[str]) -> tuple[str, int] | None:
    """What a noun names (``password``, ``phrase`` or ``token``) and where its label starts."""
    word = noun.group().lower()
    start = noun.start()
    if word in ("password", "passwd", "passcode", "pwd", "pw") or word in languages.PASSWORD_LABELS:
        return "password", start
    if word == "passphrase":
        return "phrase", start
    if word in ("token", "secret"):
        return "token", start
    qualifier = _PROSE_QUALIFIERS[word].search(text, max(0, start - 10), start)
    if qualifier is None:
        return None  # "the phrase is", "the key is", "in other words": nothing secret named
    return ("token" if word == "key" else "phrase"), qualifier.start()


def prose_secrets(text: str) -> Iterator[Span]:
    examined_until = 0
    connectors: list[int] | None = None  # where "is", "was", ":", "=", "→" start; found once, if needed
    for noun in _prose_nouns(text):
        label = _prose_label(text, noun)
        if label is None:
            continue
        credential, start = label
        end = noun.end()
        compound = noun.group().lower() in languages.COMPOUND_LABELS  # "WLAN-Passwort", "Rootkennwort"
        if start < examined_until or (start and text[start - 1] in _PROSE_NOT_AFTER and not compound):
            continue
        if connectors is None:
            connectors = [match.start() for match in _PROSE_CONNECTOR.finditer(text)]
        index = bisect.bisect_left(connectors, end)
        if index == len(connectors) or connectors[index] > end + _PROSE_REACH:
            continue  # no verb within reach: "token" in a list of words, most mentions of a key
        tail = _PROSE_TAIL.match(text, end)
        if tail is None:
            continue
        bridge = tail.group("bridge").split()
        if bridge and bridge[0].lower() not in _PROSE_BRIDGE_OPENERS:
            continue
        if credential == "token" and CURSOR_BEFORE.search(text[max(0, start - 24) : start].rstrip()):
            continue  # "the next page token is …": a cursor
        examined_until = tail.end()  # a label inside this value ("password: password: …") is part of it
        value_start, value_end = tail.span("value")
        raw = tail.group("value")
        quoted = raw[:1] in _PROSE_QUOTES
        if quoted:
            value_start, value_end = value_start + 1, value_end - 1
        if credential == "phrase":
            if quoted:
                phrase = text[value_start:value_end]
                if len(phrase) < 6 or is_placeholder(phrase):
                    continue
            else:
                found_end = prose_phrase(text, value_start)
                if found_end is None:
                    continue
                value_end = found_end
        else:
            value = text[value_start:value_end]
            if not quoted:
                value = value.rstrip(PROSE_TRAILING)
                value_end = value_start + len(value)
            if credential == "password":
                ends_clause = quoted or CLAUSE_END.match(text, value_end) is not None
                if not stated_password(value, ends_clause):
                    continue
                if not quoted:
                    value_end = with_bangs(text, value_end)
            elif not prose_token(value):
                continue
        examined_until = value_end
        yield "prose_secret", value_start, value_end
