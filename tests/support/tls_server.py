"""``ccmem serve --tls-self-signed`` as a child process on a free loopback port, for the tests of
TLS and of ``ccmem connect claude-code --server`` (docs/remote.md)."""

from __future__ import annotations

import re
import ssl
import time
from pathlib import Path

import httpx

from .processes import ChildProcess, free_port, port_open
from .server import MemoryServer, ccmem_bin


class TlsServer(ChildProcess):
    def __init__(self, work_dir: Path) -> None:
        self.work_dir = work_dir
        self.log_path = work_dir / "tls-server.log"
        self.port = free_port()
        #: Its scrubbed environment, data directory and admin token.
        self.plain = MemoryServer(work_dir)

    @property
    def base_url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    @property
    def cert_file(self) -> Path:
        return self.plain.data_dir / "tls" / "cert.pem"

    def trusting(self) -> ssl.SSLContext:
        return ssl.create_default_context(cafile=str(self.cert_file))

    def printed_fingerprint(self) -> str:
        found = re.search(r"SHA-256 fingerprint: ([0-9A-F:]{95})", self.log_path.read_text())
        assert found, self.log_path.read_text()
        return found.group(1)

    def start(self) -> TlsServer:
        command = [str(ccmem_bin()), "serve", "--tls-self-signed", "--port", str(self.port)]
        command += ["--data-dir", str(self.plain.data_dir)]
        self.launch(command, self.plain.env, port_open(self.port), "ccmem serve --tls-self-signed", 120)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:  # the port opens before the stores answer /health
            if httpx.get(f"{self.base_url}/health", verify=self.trusting(), timeout=10).status_code == 200:
                return self
            time.sleep(0.5)
        raise RuntimeError(f"no healthy /health at {self.base_url}")

    def make_token(self, user: str, name: str | None = None) -> str:
        answer = httpx.post(
            f"{self.base_url}/api/v1/tokens",
            json={"user_id": user, "name": name},
            headers=self.plain.admin_headers(),
            verify=self.trusting(),
            timeout=30,
        )
        assert answer.status_code == 201, answer.text
        return str(answer.json()["token"])

    def __enter__(self) -> TlsServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
