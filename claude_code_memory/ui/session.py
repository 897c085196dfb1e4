"""Sign-in sessions in an encrypted cookie, and the CSRF token that goes with each.

The cookie carries the user's API token, so it is encrypted and authenticated (Fernet:
AES-128-CBC + HMAC-SHA256) with a key derived from ``ui.session_secret``; it is HttpOnly and
SameSite=Strict. Without a configured secret a random key is made at start-up, so every
sign-in ends when the UI restarts. Each session has a random ``id``, which is what sign-out
records (``signouts.py``), so a copy of a signed-out cookie is refused.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
from dataclasses import asdict, dataclass

from cryptography.fernet import Fernet, InvalidToken

SESSION_COOKIE = "ccmem_session"
#: A sign-in form's CSRF token lives here until there is a session to hold it.
SIGNIN_COOKIE = "ccmem_signin"
FLASH_COOKIE = "ccmem_flash"


@dataclass(frozen=True)
class Session:
    user_id: str
    token: str
    csrf: str
    id: str

    @classmethod
    def new(cls, user_id: str, token: str) -> Session:
        return cls(user_id=user_id, token=token, csrf=secrets.token_urlsafe(32), id=secrets.token_urlsafe(16))


class Sealer:
    """Encrypts small JSON values for cookies and opens them again, with a maximum age."""

    def __init__(self, secret: str | None) -> None:
        material = secret.encode() if secret else secrets.token_bytes(32)
        key = hashlib.sha256(b"ccmem-ui-session\0" + material).digest()
        self._fernet = Fernet(base64.urlsafe_b64encode(key))

    def seal(self, value: dict[str, str]) -> str:
        return self._fernet.encrypt(json.dumps(value).encode()).decode()

    def open(self, sealed: str | None, max_age_seconds: int) -> dict[str, str] | None:
        """The value, or None when it is missing, forged, damaged or too old."""
        if not sealed:
            return None
        try:
            data = json.loads(self._fernet.decrypt(sealed.encode(), ttl=max_age_seconds))
        except (InvalidToken, ValueError, TypeError):
            return None
        return data if isinstance(data, dict) else None

    def seal_session(self, session: Session) -> str:
        return self.seal(asdict(session))

    def open_session(self, sealed: str | None, max_age_seconds: int) -> Session | None:
        data = self.open(sealed, max_age_seconds)
        if data is None:
            return None
        try:
            return Session(
                user_id=str(data["user_id"]),
                token=str(data["token"]),
                csrf=str(data["csrf"]),
                id=str(data["id"]),
            )
        except KeyError:  # also a cookie from before sessions had ids: sign in again
            return None


def same_token(expected: str | None, given: str | None) -> bool:
    """Constant-time comparison of a CSRF token; a missing one never matches."""
    if not expected or not given:
        return False
    return hmac.compare_digest(expected.encode(), given.encode())
