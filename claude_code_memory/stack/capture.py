"""Whether the stack's capture proxy can deliver what it captures: its token.

    provision_token(settings, env_file, create_token) -> user or None   (``ccmem stack up``)
    capture_status(settings, api_url) -> CaptureStatus                   (``ccmem stack status``)

The proxy posts every captured turn to ``POST /api/v1/capture`` with ``CCMEM_PROXY_TOKEN``;
without one, or with one the API refuses, it captures nothing while its port answers. So
``stack up`` creates a token for the local user when none is configured and keeps it in
``.env`` like the admin token (mode 0600, never printed), and the stack calls the proxy
healthy only when the API takes that token.
"""

from __future__ import annotations

import getpass
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..config import PROXY_TOKEN_NAME, Settings

#: The variable the proxy's token is kept under in ``.env`` (``config/`` maps it to proxy.token).
PROXY_TOKEN_ENV = "CCMEM_PROXY_TOKEN"
TOKEN_NAME = PROXY_TOKEN_NAME


@dataclass(frozen=True)
class CaptureStatus:
    ok: bool
    #: One line: for whom the proxy captures, or why it captures nothing and what fixes it.
    detail: str


def local_user(settings: Settings) -> str:
    """Whose turns the proxy captures: ``proxy.user_id``, else the login name."""
    return settings.proxy.user_id or getpass.getuser()


def keep_in_env_file(path: Path, key: str, value: str) -> None:
    """Set ``key=value`` in the dotenv file ``path`` (made or left mode 0600; other lines kept)."""
    lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
    kept = [line for line in lines if not line.strip().startswith(f"{key}=")]
    kept.append(f"{key}={value}")
    partial = path.with_name(path.name + ".tmp")
    descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        handle.write("\n".join(kept) + "\n")
    os.chmod(partial, 0o600)
    os.replace(partial, path)


def provision_token(
    settings: Settings, env_file: Path, create_token: Callable[[str, str], str]
) -> str | None:
    """A token for the local user in ``env_file`` when the proxy has none; the user it was made
    for, or None when a token was configured already."""
    if settings.proxy.token:
        return None
    user = local_user(settings)
    keep_in_env_file(env_file, PROXY_TOKEN_ENV, create_token(user, TOKEN_NAME))
    return user


def capture_status(settings: Settings, api_url: str, timeout: float = 3.0) -> CaptureStatus:
    """Whether the API at ``api_url`` takes the proxy's token (``GET /api/v1/me``)."""
    token = settings.proxy.token
    if not token:
        return CaptureStatus(
            False,
            f"no {PROXY_TOKEN_ENV}: the proxy captures nothing; `ccmem stack down && ccmem stack up` "
            "creates one for you (or set it in .env and restart the stack)",
        )
    import httpx  # where used: the supervisor's probes need no HTTP client for the others

    try:
        response = httpx.get(
            f"{api_url}/api/v1/me", headers={"Authorization": f"Bearer {token}"}, timeout=timeout
        )
    except httpx.HTTPError as exc:
        return CaptureStatus(False, f"the api at {api_url} did not answer ({exc.__class__.__name__})")
    if response.status_code == 401:
        return CaptureStatus(
            False,
            f"the api refuses {PROXY_TOKEN_ENV} (revoked?): the proxy captures nothing; remove it "
            "from .env and run `ccmem stack down && ccmem stack up` to get a new one",
        )
    if response.status_code != 200:
        return CaptureStatus(False, f"{api_url}/api/v1/me answered HTTP {response.status_code}")
    user = settings.proxy.user_id or response.json().get("user_id")
    if not user:
        return CaptureStatus(False, f"{PROXY_TOKEN_ENV} is the admin token: set proxy.user_id to whose turns")
    return CaptureStatus(True, f"captures for {user}")
