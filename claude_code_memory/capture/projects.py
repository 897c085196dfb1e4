"""The project a Claude Code session is filed under, from its path strings alone.

    session_project("/srv/shop-api/src", "/home/u/.claude/projects/-srv-shop-api/4f0c.jsonl")
        == "shop-api"

A session's project is the name of the folder Claude Code was started in: a repository's name
when it was started at the repository's root. The server (the hooks, ``POST /api/v1/capture``)
and the client (``ccmem import claude-code``, ``ccmem sync claude-code``) all name a session
with this one function, so a turn captured and the same turn imported land in one project.
It reads no disk: the server never answers whether a path a client sent exists on its own
machine, and the answer does not depend on which machine asks.
"""

from __future__ import annotations

import re

#: Longest name a project gets (the column's size).
MAX_PROJECT = 512
#: Longest ``cwd`` taken (Linux's PATH_MAX): a longer one names no project.
MAX_CWD = 4096

_SEPARATOR = re.compile(r"[/\\]")
_NOT_ALPHANUMERIC = re.compile(r"[^A-Za-z0-9]")


def session_project(cwd: str | None, transcript_path: str = "") -> str | None:
    """The project of a session working in ``cwd``: the last part of the folder it was started in.

    Claude Code keeps a session's transcript in ``~/.claude/projects/<the start folder, every
    character but a letter or a digit as "-">/``; ``transcript_path`` is any path directly in
    that folder (the transcript itself, or the folder's ``memory`` folder). When a leading part
    of ``cwd`` is the folder it is named after, that part is the start folder, so a ``cd`` into
    a subfolder keeps the session's project; else the start folder is ``cwd`` itself. None for
    no ``cwd`` or one longer than :data:`MAX_CWD`.
    """
    if not cwd or len(cwd) > MAX_CWD:
        return None
    path = cwd.rstrip("/\\") or cwd
    parts = _SEPARATOR.split(transcript_path)
    started_in = parts[-2] if len(parts) > 1 else ""
    if started_in and _NOT_ALPHANUMERIC.sub("-", path) != started_in:
        for separator in _SEPARATOR.finditer(path):
            if _NOT_ALPHANUMERIC.sub("-", path[: separator.start()]) == started_in:
                path = path[: separator.start()]
                break
    return _SEPARATOR.split(path)[-1][:MAX_PROJECT] or path[:MAX_PROJECT]
