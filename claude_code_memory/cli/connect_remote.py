"""``ccmem connect claude-code --server https://host:port``: this machine's Claude Code on a server
that runs on another one (docs/remote.md).

There is no admin token here to mint a token with, so the person brings a device token made for
this machine (``ccmem token create --user YOU --name laptop`` on the server's machine, or the
web UI's Devices page). The server's certificate is trusted one of two ways:

* ``--fingerprint``: the SHA-256 fingerprint ``ccmem serve`` printed for its self-signed
  certificate. The certificate the server presents is read and compared before anything is
  sent; when it matches it is kept (``<data>/connect/server-ca.pem``) and every client here
  trusts that one file. Pinning is checked here, once, because Claude Code cannot pin: it can
  only trust extra certificates (``NODE_EXTRA_CA_CERTS``), and the pinned file is exactly that.
* ``--ca-file``: the certificate of the CA that signed the server's (a private CA), copied there.

Without either, an https server must have a certificate the system trusts.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from ..auth.local_mode import is_loopback
from ..auth.tls import fingerprint as certificate_fingerprint
from ..auth.tls import pinned_certificate
from ..errors import BadInput
from ..stack.user_setup import write_private


@dataclass
class Remote:
    base_url: str
    token: str
    ca_file: Path | None
    user: str
    #: The certificate's fingerprint (pinned or read from the CA file); None: the system's CAs.
    fingerprint: str | None

    @property
    def verify(self) -> Any:
        import ssl

        return ssl.create_default_context(cafile=str(self.ca_file)) if self.ca_file else True

    @classmethod
    def prepare(
        cls,
        directory: Path,
        server: str,
        token: str | None,
        fingerprint: str | None,
        ca_file: Path | None,
        token_user: Callable[[str, str, Any], str | None],
    ) -> Remote:
        """Check the URL, pin or copy the certificate (into ``directory``), and ask the server
        whose token it is (``token_user(base_url, token, verify)``)."""
        parts = urlsplit(server.rstrip("/"))
        if parts.scheme not in ("https", "http") or not parts.hostname:
            raise BadInput(f"--server {server!r}: give the server's URL, https://host:port")
        if parts.scheme == "http" and not is_loopback(parts.hostname):
            raise BadInput(
                f"--server {server!r}: a server on another machine is reached over https only "
                "(start it with `ccmem serve --tls-self-signed`; docs/remote.md)"
            )
        if fingerprint and ca_file:
            raise BadInput("--fingerprint or --ca-file, not both")
        if not token:
            raise BadInput(
                "--server needs a device token for this machine: make one on the server's machine "
                "(`ccmem token create --user YOU --name THIS-MACHINE`, or the web UI's Devices page) "
                "and pass --token (or set $CCMEM_TOKEN)"
            )
        base_url = f"{parts.scheme}://{parts.netloc}"
        directory.mkdir(parents=True, exist_ok=True)
        os.chmod(directory, 0o700)
        kept: Path | None = None
        if fingerprint or ca_file:
            kept = directory / "server-ca.pem"
            if fingerprint:
                pem = pinned_certificate(parts.hostname, parts.port or 443, fingerprint)
            else:
                assert ca_file is not None
                if not ca_file.is_file():
                    raise BadInput(f"--ca-file {str(ca_file)!r}: no such file")
                pem = ca_file.read_bytes()
            write_private(kept, pem.decode("ascii"))
        remote = cls(base_url, token, kept, "", None)
        if kept is not None:
            remote.fingerprint = certificate_fingerprint(kept.read_bytes())
        user = token_user(base_url, token, remote.verify)
        if user is None:
            raise BadInput(
                f"the server at {base_url} does not take this token (unknown, revoked or the admin's)"
            )
        remote.user = user
        return remote

    def check_user(self, wanted: str | None) -> str:
        if wanted and wanted != self.user:
            raise BadInput(f"the token acts for user {self.user!r}, not {wanted!r}")
        return self.user

    def keep_token(self, path: Path) -> None:
        write_private(path, self.token + "\n")

    def summary(self, user: str) -> str:
        trust = (
            f"the server's certificate {self.fingerprint} is trusted from {self.ca_file} (the hooks "
            "read it; Claude Code gets it as NODE_EXTRA_CA_CERTS in its settings)"
            if self.ca_file
            else "the server's certificate is checked against the system's CAs"
        )
        return f"connected Claude Code on this machine to {self.base_url} for {user}; {trust}"
