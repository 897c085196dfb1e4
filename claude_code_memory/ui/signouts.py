"""Sessions signed out before they expired: the UI's only server-side session state.

A session cookie is sealed and self-contained, so without this list a copy of it would open
pages until it expired even after its owner signed out. Each session has a random id; signing
out records that id here until the moment the cookie would have expired anyway, after which
the entry is pruned. The list is a small JSON file (``{session id: expiry, epoch seconds}``)
so that a restart of the UI (with the same ``ui.session_secret``) does not revive signed-out
cookies. When the file cannot be written the list still holds in memory and a warning is
logged: sign-out never fails for it.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
import threading
import time
from pathlib import Path

log = logging.getLogger(__name__)


class SignedOut:
    def __init__(self, path: Path | None) -> None:
        """``path``: the file that keeps the list across restarts; ``None``: memory only."""
        self.path = path
        self._lock = threading.Lock()
        self._until: dict[str, float] = self._load()

    def add(self, session_id: str, until: float) -> None:
        """Refuse ``session_id`` from now until ``until`` (epoch seconds), when it expires anyway."""
        with self._lock:
            now = time.time()
            self._until = {sid: end for sid, end in self._until.items() if end > now}
            self._until[session_id] = until
            self._save()

    def __contains__(self, session_id: object) -> bool:
        with self._lock:
            end = self._until.get(session_id) if isinstance(session_id, str) else None
        return end is not None and end > time.time()

    def _load(self) -> dict[str, float]:
        if self.path is None or not self.path.exists():
            return {}
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            log.warning(
                "cannot read the signed-out sessions in %s (%s); starting without them", self.path, exc
            )
            return {}
        if not isinstance(data, dict):
            return {}
        now = time.time()
        return {
            str(sid): float(end) for sid, end in data.items() if isinstance(end, int | float) and end > now
        }

    def _save(self) -> None:
        if self.path is None:
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            # Write a whole new file and rename it over the old one: a crash never leaves half a list.
            handle, temporary = tempfile.mkstemp(dir=self.path.parent, prefix=".signed-out-")
            try:
                with os.fdopen(handle, "w", encoding="utf-8") as file:
                    json.dump(self._until, file)
                os.replace(temporary, self.path)
            except BaseException:
                Path(temporary).unlink(missing_ok=True)
                raise
        except OSError as exc:
            log.warning(
                "cannot write the signed-out sessions to %s (%s); a UI restart would forget them",
                self.path,
                exc,
            )
