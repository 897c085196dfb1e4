"""Paths of the memory tool's files: what may name a file under ``/memories``, and its one spelling.

    memory_path(raw) -> str      (pure; raises PathRefused with the text the model is shown)

Anthropic's memory tool (``memory_20250818``) names files by absolute paths under
``/memories``. Here a path is not a place on a disk but part of a memory's identity, so it
must have exactly one spelling, and no spelling may reach outside the directory. A path is
refused, and the command changes nothing, when it

* does not start with ``/memories`` (exactly that directory, not ``/memoriesX``);
* has a ``.`` or ``..`` component, or an empty one (``//``), or a backslash;
* holds a percent-encoded byte (``%2e%2e``, ``%2f``, ``%00``: any ``%XX``), which a later
  decoding step could turn into a traversal;
* holds a control, format, surrogate, private-use or unassigned character (NUL, newlines,
  bidirectional overrides, zero-width joiners);
* changes shape under Unicode compatibility normalisation (NFKC): fullwidth dots and
  solidi (``．．／``), the one-dot leader and their kin become ``.``, ``/`` or ``\\`` there;
* is longer than :data:`MAX_PATH_CHARS`, nests deeper than :data:`MAX_DEPTH`, or has a
  component longer than :data:`MAX_NAME_BYTES` bytes of UTF-8.

The limits live here and nowhere else. The spelling kept is the NFC form without a trailing
slash; ``/memories`` itself is the root directory.
"""

from __future__ import annotations

import re
import unicodedata

from ..errors import BadInput

ROOT = "/memories"
#: The whole path, ``/memories`` included, in characters (the database column holds this many).
MAX_PATH_CHARS = 512
#: One component (a file or directory name), in bytes of UTF-8, as most file systems allow.
MAX_NAME_BYTES = 255
#: ServerParts below ``/memories``.
MAX_DEPTH = 16

_PERCENT_ESCAPE = re.compile(r"%[0-9A-Fa-f]{2}")
#: Unicode categories no name may hold: control, format (bidi overrides, zero-width joiners),
#: surrogate, private use, unassigned, line and paragraph separators.
_REFUSED_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})


class PathRefused(BadInput):
    """A path the memory tool will not act on; the message is what the model is shown."""


def memory_path(raw: object) -> str:
    """The canonical spelling of ``raw`` (``/memories`` or ``/memories/a/b.md``), or
    :class:`PathRefused` with the reference implementation's wording where it has one."""
    if not isinstance(raw, str) or not raw:
        raise PathRefused("Path must start with /memories, got: " + _shown(raw))
    shown = _shown(raw)
    if len(raw) > MAX_PATH_CHARS:
        raise PathRefused(f"Path {shown[:80]}… is too long: at most {MAX_PATH_CHARS} characters")
    for character in raw:
        if unicodedata.category(character) in _REFUSED_CATEGORIES:
            raise PathRefused(f"Path {shown} contains a control or invisible character")
    if raw != ROOT and not raw.startswith(ROOT + "/"):
        raise PathRefused(f"Path must start with /memories, got: {shown}")
    folded = unicodedata.normalize("NFKC", raw)
    for spelling in (raw, folded):
        if "\\" in spelling or _PERCENT_ESCAPE.search(spelling):
            raise PathRefused(f"Path {shown} would escape /memories directory")
    if folded.count("/") != raw.count("/"):
        raise PathRefused(f"Path {shown} would escape /memories directory")
    components = raw[len(ROOT) :].split("/")[1:]
    if components and components[-1] == "":
        components.pop()  # "/memories/notes/" names the directory /memories/notes
    for name, folded_name in zip(components, folded[len(ROOT) :].split("/")[1:], strict=False):
        if name in ("", ".", "..") or folded_name in ("", ".", ".."):
            raise PathRefused(f"Path {shown} would escape /memories directory")
        if len(name.encode("utf-8")) > MAX_NAME_BYTES:
            raise PathRefused(f"Path {shown} has a name longer than {MAX_NAME_BYTES} bytes")
    if len(components) > MAX_DEPTH:
        raise PathRefused(f"Path {shown} is nested deeper than {MAX_DEPTH} directories")
    return unicodedata.normalize("NFC", "/".join([ROOT, *components]))


def is_under(path: str, directory: str) -> bool:
    """Whether canonical ``path`` is ``directory`` or inside it (by components, not by prefix:
    ``/memories/ab`` is not under ``/memories/a``)."""
    return path == directory or path.startswith(directory.rstrip("/") + "/")


def relative(path: str, directory: str) -> str:
    """``path`` below ``directory`` (both canonical; ``path`` under it), without a leading slash."""
    return path[len(directory) :].lstrip("/")


def _shown(raw: object) -> str:
    """The path as the error shows it: printable characters as sent, the rest escaped."""
    text = raw if isinstance(raw, str) else repr(raw)
    return "".join(
        c if unicodedata.category(c) not in _REFUSED_CATEGORIES else c.encode("unicode_escape").decode()
        for c in text
    )
