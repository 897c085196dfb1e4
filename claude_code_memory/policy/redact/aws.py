"""AWS credentials: access key ids by their prefix, and the 40-character secret access key
wherever it is named (``aws_secret_access_key = …``, ``"SecretAccessKey": "…"``, "the aws
secret key wJal… for the backup user") or sits on the same line as a key id (credentials.csv).
"""

from __future__ import annotations

import re
import string
from collections.abc import Iterator

from .placeholders import character_classes, is_placeholder, looks_random
from .rules import Rule
from .scan import BASE64_CHARS, Span

AWS_KEY_ID = Rule(
    "aws_access_key",
    re.compile(r"(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z0-9]{16}(?![A-Z0-9])"),
    not_after=frozenset(string.ascii_uppercase + string.digits),
)

_AWS_SECRET = re.compile(
    r"[Ss](?i:ecret)(?P<access>(?i:[_ ]?access)?)(?i:[_ ]?key)?(?: \[[^\]\n]{0,40}\])?[\"']?[ \t]*[:=][ \t]*"
    r"[\"']?(?P<s>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])"
)
_AWS_BEFORE = re.compile(r"(?i)aws[_ ]?\Z")


def aws_secret_keys(text: str) -> Iterator[Span]:
    """``aws_secret_access_key = …``, ``"SecretAccessKey": "…"``, ``AWS Secret Access Key [None]: …``."""
    for match in _AWS_SECRET.finditer(text):
        named = match.group("access") or _AWS_BEFORE.search(text, max(0, match.start() - 4), match.start())
        if named and looks_random(match.group("s")):
            yield "aws_secret_key", match.start("s"), match.end("s")


_BASE64_40 = re.compile(r"[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])")

# "aws secret key wJal… for the backup user", "the AWS secret access key - wJal…": prose with no
# "is" or ":" between the name and the key. The name must say AWS (before the label, or just
# after it: "… — that's the secret key for s3"), or "secret access key", which only AWS calls it;
# the key must come within a few words on the same line, after the name or before it, and mix
# upper case, lower case and digits, as a git hash or a sha1 in hex does not.
_AWS_SECRET_IN_PROSE = re.compile(
    r"[Ss](?i:ecret)(?P<access>[ _-]?(?i:access))?(?:[ _-]?(?i:key))?(?![A-Za-z])"
)
_AWS_NAMED_BEFORE = re.compile(r"(?i)(?:^|[^a-z])(?:aws|amazon|iam)[^a-z\n]")
_AWS_NAMED_AFTER = re.compile(
    r"(?i)[ \t]+(?:(?:for|of|on)[ \t]+)?(?:the[ \t]+)?(?:aws|amazon|iam|s3)(?![a-z0-9])"
)
_AWS_SECRET_REACH = 48


def aws_secrets_in_prose(text: str) -> Iterator[Span]:
    for label in _AWS_SECRET_IN_PROSE.finditer(text):
        start, end = label.span()
        line_start = text.rfind("\n", max(0, start - 40), start) + 1 or max(0, start - 40)
        if not (
            label.group("access")
            or _AWS_NAMED_BEFORE.search(text, line_start, start)
            or _AWS_NAMED_AFTER.match(text, end)
        ):
            continue
        line_end = text.find("\n", end, end + _AWS_SECRET_REACH)
        after = _aws_prose_key(text, end, line_end if line_end >= 0 else end + _AWS_SECRET_REACH)
        if after is None:  # the key given first: "set it to wJal… — that's the secret key for s3"
            line_before = text.rfind("\n", max(0, start - _AWS_SECRET_REACH), start) + 1
            after = _aws_prose_key(text, max(line_before, start - _AWS_SECRET_REACH - 40), start, last=True)
        if after is not None:
            yield "aws_secret_key", after[0], after[1]


def _aws_prose_key(text: str, begin: int, stop: int, *, last: bool = False) -> tuple[int, int] | None:
    """The first (``last``: the last) whole 40-character key between ``begin`` and ``stop``."""
    found = None
    for candidate in _BASE64_40.finditer(text, begin, stop):
        if candidate.start() and text[candidate.start() - 1] in BASE64_CHARS:
            continue
        value = candidate.group()
        found = candidate.span() if character_classes(value) >= 3 and looks_random(value) else None
        if not last:
            break
    return found


def aws_secrets_beside_key_ids(text: str) -> Iterator[Span]:
    """A 40-character base64 string on the same line as an access key id (credentials.csv)."""
    for _, key_start, key_end in AWS_KEY_ID(text):
        line_start = text.rfind("\n", max(0, key_start - 300), key_start) + 1 or max(0, key_start - 300)
        line_end = text.find("\n", key_end, key_end + 300)
        line_end = min(len(text), key_end + 300) if line_end < 0 else line_end
        for candidate in _BASE64_40.finditer(text, line_start, line_end):
            value = candidate.group()
            if candidate.start() and text[candidate.start() - 1] in BASE64_CHARS:
                continue
            if character_classes(value) >= 3 and not is_placeholder(value):
                yield "aws_secret_key", candidate.start(), candidate.end()
