"""The data and state directories readable by their owner only: memories, token hashes, logs.

    private_dir(path)          made (or kept) mode 0700
    tighten(root) -> Tightened what under ``root`` others could read, narrowed where it is ours

Files the server creates are private from their first byte where the process umask is
:data:`PRIVATE_UMASK` (``ccmem serve``, the stack's supervisor, the image); SQLite gives a
database's ``-wal`` and ``-shm`` the mode of the database itself. :func:`tighten` is for what an
older install or another process left readable: the server runs it over its directories at
start and says what it did, and what it could not do (a file another account owns) with the
command that fixes it.

Key files (``*.pem``) are left as they are: one others could read may have been copied, so the
code that loads it refuses it (``auth/oauth/keys.py``, ``auth/tls.py``) instead of quietly narrowing it.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

#: The umask of the server's processes: what they create is their owner's only.
PRIVATE_UMASK = 0o077
#: Refused where they are loaded, never narrowed here (the module docstring).
KEY_SUFFIX = ".pem"


@dataclass(frozen=True)
class Tightened:
    """What :func:`tighten` found under ``root``."""

    root: Path
    #: Files and folders others could read, now their owner's only.
    narrowed: list[Path] = field(default_factory=list)
    #: Files and folders others can read that this process may not change (another owner's).
    foreign: list[Path] = field(default_factory=list)

    def warnings(self) -> list[str]:
        """One line for each kind of finding, with what was done or the command that does it."""
        lines = []
        if self.narrowed:
            lines.append(
                f"{self.root} held {len(self.narrowed)} files or folders other accounts could read "
                f"(first: {self.narrowed[0]}); made them readable by their owner only"
            )
        if self.foreign:
            lines.append(
                f"{self.root} holds {len(self.foreign)} files or folders other accounts can read and "
                f"this server may not change (first: {self.foreign[0]}): as their owner, run "
                f"chmod -R go-rwx {self.root}"
            )
        return lines


def private_dir(path: Path) -> None:
    """``path`` (and missing parents) made, and ``path`` itself mode 0700 when it is ours."""
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    if path.stat().st_uid == os.geteuid():
        path.chmod(stat.S_IMODE(path.stat().st_mode) & 0o700)


def tighten(root: Path) -> Tightened:
    """Take group and other permissions off ``root`` and everything under it that this process
    owns; list what others can read and it does not own. Links are not followed."""
    found = Tightened(root)
    if not root.is_dir():
        return found
    owner = os.geteuid()
    for folder, folders, files in os.walk(root):
        if folder == str(root):
            _narrow(root, owner, found)
        for name in folders:
            _narrow(Path(folder, name), owner, found)
        for name in files:
            if not name.endswith(KEY_SUFFIX):
                _narrow(Path(folder, name), owner, found)
    return found


def _narrow(path: Path, owner: int, found: Tightened) -> None:
    try:
        status = path.lstat()
    except OSError:
        return  # gone since the walk listed it
    if stat.S_ISLNK(status.st_mode) or not status.st_mode & 0o077:
        return
    if status.st_uid != owner:
        found.foreign.append(path)
        return
    try:
        path.chmod(stat.S_IMODE(status.st_mode) & 0o700)
    except OSError:
        found.foreign.append(path)
    else:
        found.narrowed.append(path)
