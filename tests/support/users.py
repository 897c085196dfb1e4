"""Test users: a fresh name, a token of its own and a client carrying it, on any test server."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .servers import ApiServer


def unique(name: str, length: int = 8) -> str:
    """``name`` with a random suffix, so that tests sharing a server never share a user."""
    return f"{name}-{uuid.uuid4().hex[:length]}"


class User:
    """A user of ``server``: ``id``, ``token``, ``headers`` and ``http``, a client with the token.

    Test files subclass it with the calls they make (``capture``, ``search``...)."""

    def __init__(self, server: ApiServer, name: str, *, timeout: float = 60, suffix: int = 8) -> None:
        self.server = server
        self.id = unique(name, suffix)
        self.token = server.make_token(self.id)
        self.http = server.client(self.token, timeout=timeout)

    @property
    def name(self) -> str:
        return self.id

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}
