"""Caddy in front of API replicas on 127.0.0.1, from the team profile's own ``deploy/Caddyfile``.

The same file the ``edge`` container runs, with the replicas' addresses swapped for loopback
ports and the site bound to 127.0.0.1 on a free port: TLS from Caddy's local CA (its root
certificate, which clients must trust, is :attr:`CaddyEdge.root_certificate`), and no HTTP
listener (the team profile's port 80 redirect is off). Debian's ``caddy`` package; stopped by its
PID like every server of the tests.

Debian 12's Caddy is 2.6; the image is newer. One subdirective changed name between them: the
image's ``request_buffers <size>`` is 2.6's ``buffer_requests`` (:func:`for_debian_caddy`).
"""

from __future__ import annotations

import re
import ssl
import subprocess
from pathlib import Path

import httpx

from .processes import ChildProcess, free_port, require_tool
from .server import REPO_ROOT


def caddy_bin() -> Path:
    return require_tool("caddy", "the team profile's edge (apt-get install caddy)")


def for_debian_caddy(text: str) -> str:
    """deploy/Caddyfile as Debian's Caddy 2.6 reads it (the module's docstring)."""
    return re.sub(r"request_buffers \S+", "buffer_requests", text)


class CaddyEdge(ChildProcess):
    def __init__(self, work_dir: Path, upstreams: list[str]) -> None:
        self.work_dir = work_dir
        self.work_dir.mkdir(parents=True, exist_ok=True)
        self.log_path = work_dir / "caddy.log"
        self.port = free_port()
        self.upstreams = upstreams
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def base_url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    @property
    def root_certificate(self) -> Path:
        return self.work_dir / "data" / "caddy" / "pki" / "authorities" / "local" / "root.crt"

    def caddyfile(self) -> str:
        text = for_debian_caddy((REPO_ROOT / "deploy" / "Caddyfile").read_text())
        text = text.replace("api-1:8765 api-2:8765", " ".join(self.upstreams))
        # Loopback only, no port 80.
        return text.replace(
            "\tadmin off\n", "\tadmin off\n\tdefault_bind 127.0.0.1\n\tauto_https disable_redirects\n", 1
        )

    def start(self) -> CaddyEdge:
        path = self.work_dir / "Caddyfile"
        path.write_text(self.caddyfile())
        env = {
            "PATH": "/usr/bin:/bin",
            "HOME": str(self.work_dir),
            "XDG_DATA_HOME": str(self.work_dir / "data"),
            "XDG_CONFIG_HOME": str(self.work_dir / "config"),
            "CCMEM_TEAM_HOST": f"127.0.0.1:{self.port}",
        }
        command = [str(caddy_bin()), "run", "--config", str(path), "--adapter", "caddyfile"]
        self.launch(command, env, self._answers, f"caddy on port {self.port}", 60)
        return self

    def _answers(self) -> bool:
        if not self.root_certificate.exists():
            return False
        try:
            return httpx.get(f"{self.base_url}/health", verify=self.trust(), timeout=5).status_code == 200
        except httpx.HTTPError:
            return False

    def trust(self) -> ssl.SSLContext:
        """What a client trusts to reach the edge: Caddy's local root, nothing else."""
        return ssl.create_default_context(cafile=str(self.root_certificate))

    def client(self, token: str, *, timeout: float = 60) -> httpx.Client:
        return httpx.Client(
            base_url=self.base_url,
            headers={"Authorization": f"Bearer {token}"},
            verify=self.trust(),
            timeout=timeout,
        )
