"""The CLI's REST client (:class:`claude_code_memory.client.remote.Remote`) against real servers
on loopback: plain HTTP (for which it loads no trust store) works; HTTPS still verifies the
server's certificate against the trust store."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from claude_code_memory.client.remote import Remote
from claude_code_memory.errors import Unavailable
from tests.support.fake_anthropic import FakeAnthropic, always_text, self_signed_certificate

pytestmark = pytest.mark.integration  # fake servers on 127.0.0.1


def test_plain_http_sends_the_token() -> None:
    with FakeAnthropic(always_text("hello")) as server:
        remote = Remote(server.base_url, "token")
        try:
            remote.request("HEAD", "/")
        finally:
            remote.close()
        assert server.requests[-1].headers["authorization"] == "Bearer token"


def test_https_verifies_the_certificate_against_the_trust_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    certificate, key = self_signed_certificate(tmp_path)
    with FakeAnthropic(always_text("hello"), tls=(certificate, key)) as server:
        assert server.base_url.startswith("https://")
        remote = Remote(server.base_url, "token")
        try:
            with pytest.raises(Unavailable) as refused:
                remote.request("HEAD", "/")
        finally:
            remote.close()
        assert isinstance(refused.value.__cause__, httpx.ConnectError)
        assert "CERTIFICATE_VERIFY_FAILED" in str(refused.value.__cause__)
        assert server.requests == []

        # The same server once the trust store (httpx reads $SSL_CERT_FILE) holds its certificate.
        monkeypatch.setenv("SSL_CERT_FILE", str(certificate))
        trusting = Remote(server.base_url, "token")
        try:
            trusting.request("HEAD", "/")
        finally:
            trusting.close()
        assert len(server.requests) == 1
