"""Passwords given as options on a command line: ``curl -u user:password``, ``mysql -pSECRET``,
``docker login -p …``, ``twine upload -p …``, ``sshpass -p``, ``redis-cli -a``, ``mongosh -p``,
``zip -P``, ``7z -p…``, ``openssl -passin pass:…``; a command runs on across ``\\``
continuations.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from .placeholders import is_placeholder
from .scan import WORD_DASH, Span


@dataclass(frozen=True)
class _CommandOption:
    """An option of a command line, such as ``curl … -u user:password`` or ``mysql … -pSECRET``."""

    kind: str
    command: re.Pattern[str]
    option: re.Pattern[str]  # the secret is group "s"; searched up to the end of the command
    # what must come just before ``command`` ("docker " before "login "): scanning for a literal
    # and looking back is faster than scanning for an alternation of program names
    before: re.Pattern[str] | None = None

    def __call__(self, text: str) -> Iterator[Span]:
        scanned_until = 0
        for command in self.command.finditer(text):
            start = command.start()
            if self.before is not None:
                program = self.before.search(text, max(0, start - 40), start)
                if program is None:
                    continue
                start = program.start()
            if start < scanned_until or (start and text[start - 1] in WORD_DASH):
                continue
            scanned_until = _command_end(text, command.end())
            for option in self.option.finditer(text, command.end() - 1, scanned_until):
                if not is_placeholder(option.group("s").rpartition(":")[2]):
                    yield self.kind, option.start("s"), option.end("s")


def _command_end(text: str, position: int, limit: int = 2000) -> int:
    """End of the shell command running on from ``position``, across ``\\`` continuations."""
    stop = min(len(text), position + limit)
    while True:
        newline = text.find("\n", position, stop)
        if newline < 0:
            return stop
        if not text[position:newline].rstrip("\r").endswith("\\"):
            return newline
        position = newline + 1


# An option's value: anything up to a space or a quote, but not the next option (--password-stdin).
_OPTION_VALUE = r"(?P<s>(?!-{1,2}[a-z][a-z-]{0,30}(?:[\s\"']|\Z))[^\s\"'`]{1,256})"

COMMAND_OPTIONS = (
    _CommandOption(
        "basic_auth",
        re.compile(r"curl[ \t]"),
        re.compile(r"[ \t](?:-u|--user)[ =][\"']?(?P<s>[^\s:\"'`]{1,128}:[^\s\"'`]{1,256})"),
    ),
    _CommandOption(
        "password_assignment",
        re.compile(r"mysql(?:dump|admin)?[ \t]"),
        re.compile(r"[ \t]-p(?P<s>[^\s\"'`]{4,128})"),
    ),
    _CommandOption(  # -p is a password only after "login"; "docker run -p 8080:80" publishes a port
        "password_assignment",
        re.compile(r"login[ \t]"),
        re.compile(r"[ \t](?:-p|--password)(?:[ \t]+|=)?[\"']?" + _OPTION_VALUE),
        re.compile(
            r"(?:docker|podman|nerdctl|buildah|skopeo|oras|crane|helm[ \t]+registry)[ \t]+(?:auth[ \t]+)?\Z"
        ),
    ),
    _CommandOption(  # twine upload -p pypi-…; -p is the password of twine's upload and register
        "password_assignment",
        re.compile(r"twine[ \t]+(?:upload|register)[ \t]"),
        re.compile(r"[ \t](?:-p|--password)(?:[ \t]+|=)[\"']?" + _OPTION_VALUE),
    ),
    _CommandOption(
        "password_assignment",
        re.compile(r"sshpass[ \t]"),
        re.compile(r"[ \t]-p[ \t]*[\"']?" + _OPTION_VALUE),
    ),
    _CommandOption(
        "password_assignment",
        re.compile(r"redis-cli[ \t]"),
        re.compile(r"[ \t](?:-a|--pass)[ \t]+[\"']?" + _OPTION_VALUE),
    ),
    _CommandOption(  # mongo and mongosh; mongodump, mongorestore, mongoexport, mongoimport
        "password_assignment",
        re.compile(r"mongo(?:sh|dump|restore|export|import)?[ \t]"),
        re.compile(r"[ \t](?:-p|--password)(?:[ \t]+|=)[\"']?" + _OPTION_VALUE),
    ),
    _CommandOption(  # zip -P, unzip -P: an archive's password
        "password_assignment",
        re.compile(r"zip[ \t]"),
        re.compile(r"[ \t]-P[ \t]+[\"']?" + _OPTION_VALUE),
        re.compile(r"(?:un)?\Z"),
    ),
    _CommandOption(  # 7z x -p…, 7za, 7zz
        "password_assignment",
        re.compile(r"7z[az]?[ \t]"),
        re.compile(r"[ \t]-p(?=\S)[\"']?" + _OPTION_VALUE),
    ),
    _CommandOption(  # openssl … -passin pass:…, -passout pass:…, -pass pass:…
        "password_assignment",
        re.compile(r"openssl[ \t]"),
        re.compile(r"[ \t]-pass(?:in|out)?[ \t]+[\"']?pass:" + _OPTION_VALUE),
    ),
)
