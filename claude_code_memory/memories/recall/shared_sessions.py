"""The hooks' per-session state in the database, for API replicas: what
:class:`~.context.Sessions` keeps in one process's memory, kept where every replica reads it.

A session's hooks may reach a different replica each (a load balancer picks per request): the
memories a session was given, the prompt awaiting its Stop and the model live in
``shared_state`` (store/shared_state.py), under scopes named by a digest of the user and the
session id together (a session id is no secret: another user's same id is another session).
Everything a session left expires :data:`SESSION_TTL` after it was written; a resumed session
older than that is briefed from the access log, as after a restart of a single server.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from datetime import timedelta

from ...store.shared_state import SharedState

#: How long a session's state outlives its last hook.
SESSION_TTL = timedelta(days=7)
_SEEN = "seen"


def _scope(kind: str, user_id: str, session_id: str) -> str:
    digest = hashlib.sha256(f"{user_id}\x1f{session_id}".encode()).hexdigest()
    return f"hook-{kind}:{digest}"


class SharedSessions:
    """Same methods as :class:`~.context.Sessions`, over :class:`SharedState`."""

    def __init__(self, shared: SharedState, ttl: timedelta = SESSION_TTL) -> None:
        self.shared = shared
        self.ttl = ttl

    def _seen(self, user_id: str, session_id: str) -> None:
        self.shared.put(_scope("session", user_id, session_id), _SEEN, True, ttl=self.ttl)

    def injected(self, user_id: str, session_id: str) -> set[str]:
        return set(self.shared.keys(_scope("given", user_id, session_id)))

    def mark_injected(self, user_id: str, session_id: str, ids: Sequence[str]) -> None:
        self.shared.add_keys(_scope("given", user_id, session_id), ids, ttl=self.ttl)
        self._seen(user_id, session_id)

    def knows(self, user_id: str, session_id: str) -> bool:
        return self.shared.exists(_scope("session", user_id, session_id))

    def forget_injected(self, user_id: str, session_id: str) -> None:
        self.shared.drop(_scope("given", user_id, session_id))
        self._seen(user_id, session_id)

    def keep_prompt(self, user_id: str, session_id: str, prompt: str) -> None:
        self.shared.put(_scope("session", user_id, session_id), "prompt", prompt, ttl=self.ttl)

    def take_prompt(self, user_id: str, session_id: str) -> str | None:
        prompt = self.shared.take(_scope("session", user_id, session_id), "prompt")
        return prompt if isinstance(prompt, str) else None

    def set_model(self, user_id: str, session_id: str, model: str) -> None:
        self.shared.put(_scope("session", user_id, session_id), "model", model, ttl=self.ttl)

    def model(self, user_id: str, session_id: str) -> str | None:
        model = self.shared.get(_scope("session", user_id, session_id), "model")
        return model if isinstance(model, str) else None

    def end(self, user_id: str, session_id: str) -> None:
        self.shared.drop(_scope("session", user_id, session_id))
        self.shared.drop(_scope("given", user_id, session_id))
