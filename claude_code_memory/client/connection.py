"""The connected user: which server, which user, which token, and how the server is started.

``ccmem connect claude-code`` writes it (``connection.json`` in the per-user config directory,
mode 0600, like ``gh auth login``'s hosts file); every user command of the CLI reads it as its
default credentials, and the hooks read it to start a local server that is down. ``--undo``
removes it. Standard library only: the hooks' scripts load the same file with ``json``.

The token itself stays in its own 0600 file (``token_file``), so that this file can be read
for the URL and the start command without handling a secret.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ..config import user_dirs

FILE_NAME = "connection.json"
#: What starts a local server when no connection says otherwise: it works from the package and
#: from a checkout alike (it sets up the user's directories first when they are missing).
START_HINT = "ccmem up"


@dataclass(frozen=True)
class Connection:
    #: The server's base URL, no trailing slash.
    url: str
    user: str
    #: The 0600 file that holds the user's token.
    token_file: str
    #: "plugin" or "hooks": how Claude Code is connected.
    route: str = "hooks"
    #: The config file of the installation that serves ``url`` (absent for a remote server).
    config: str | None = None
    #: The command that starts the local server (argv, absolute paths); empty: never started by
    #: anything of ours (a remote server, or a user who turned the start on demand off).
    start: list[str] = field(default_factory=list)
    #: The command a person types to start it, for messages ("start it with ..."); empty for a
    #: remote server.
    start_hint: str = START_HINT
    #: The command that takes Claude Code's auto-memory in (argv, absolute paths: the connected
    #: ccmem's ``sync claude-code``); the plugin's SessionStart hook adds ``--cwd DIR --quiet``
    #: and runs it in the background. Empty: the ccmem of ``start``, else none.
    sync: list[str] = field(default_factory=list)
    #: The CA certificate a remote server's is checked against (pinned by ``--fingerprint`` or
    #: given by ``--ca-file``); None: the system's CAs.
    ca_file: str | None = None

    @property
    def local(self) -> bool:
        return bool(self.start)

    def token(self) -> str | None:
        """The token in ``token_file``; None when the file is gone or empty."""
        try:
            value = Path(self.token_file).read_text(encoding="utf-8").strip()
        except OSError:
            return None
        return value or None


def path(environ: Mapping[str, str] | None = None) -> Path:
    return user_dirs(dict(environ) if environ is not None else None)[0] / FILE_NAME


def load(environ: Mapping[str, str] | None = None) -> Connection | None:
    """The saved connection; None when there is none or it cannot be read."""
    try:
        raw = json.loads(path(environ).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(raw, dict):
        return None
    known = {key: raw[key] for key in Connection.__dataclass_fields__ if key in raw}
    try:
        return Connection(**known)
    except TypeError:
        return None


def save(connection: Connection, environ: Mapping[str, str] | None = None) -> Path:
    """Write it mode 0600 from its first byte (the config directory made 0700 when new)."""
    target = path(environ)
    if not target.parent.exists():
        target.parent.mkdir(parents=True, mode=0o700)
    partial = target.with_name(f".{target.name}.tmp")
    descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as stream:
        stream.write(json.dumps(asdict(connection), indent=2) + "\n")
    os.chmod(partial, 0o600)
    os.replace(partial, target)
    return target


def when_down(url: str | None = None, environ: Mapping[str, str] | None = None) -> str:
    """What to do when the server at ``url`` does not answer, as the end of a message.

    The saved connection's own ``start_hint`` when it has one; for the connection's remote
    server (no start command, no local config: nothing of ours starts it) that it runs
    elsewhere; else :data:`START_HINT`.
    """
    saved = load(environ)
    if saved is not None and (url is None or same_server(url, saved.url)):
        if not saved.local and not saved.config:
            return f"the server at {saved.url} runs on another machine: nothing here starts it"
        return f"start it with `{saved.start_hint or START_HINT}`"
    return f"start it with `{START_HINT}`"


def same_server(url: str, other: str) -> bool:
    return url.rstrip("/").lower() == other.rstrip("/").lower()


def remove(environ: Mapping[str, str] | None = None) -> None:
    path(environ).unlink(missing_ok=True)
