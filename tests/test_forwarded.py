"""Which address a request counts for (``server.trusted_proxies``, docs/remote.md): the consent
page's sign-in throttle, the per-address rate limit and the web UI's sign-in throttle, each
against a real ``ccmem serve`` / ``ccmem ui``. By default no ``X-Forwarded-For`` is believed,
whoever sends it (loopback included); with a trusted proxy, the address it forwarded counts,
never what the client wrote to the left of it."""

from __future__ import annotations

import re
from pathlib import Path

import httpx
import pytest

from tests.support.oauth_flow import REDIRECT_URI
from tests.support.server import MemoryServer
from tests.support.web_ui import UiServer
from tests.support.windows import clear_of_the_minute_edge

OAUTH = {
    "CCMEM_AUTH__OAUTH__ENABLED": "true",
    "CCMEM_SERVER__RATE_LIMIT__LOGIN_FAILURES": "3/15 minutes",
}
_FORM_REQUEST = re.compile(r'name="request" value="([^"]+)"')


def _consent_request(base: str) -> str:
    """A signed authorization request, as the consent page's form carries it."""
    client_id = httpx.post(f"{base}/register", json={"redirect_uris": [REDIRECT_URI]}, timeout=30).json()[
        "client_id"
    ]
    params = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": REDIRECT_URI,
        "code_challenge": "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM",
        "state": "s",
        "scope": "memory:read",
    }
    page = httpx.get(f"{base}/authorize", params=params, follow_redirects=True, timeout=30)
    found = _FORM_REQUEST.search(page.text)
    assert found, page.text
    return found.group(1)


def _sign_in_on_consent(base: str, request: str, token: str, forwarded_for: str) -> httpx.Response:
    return httpx.post(
        f"{base}/oauth/consent",
        data={"request": request, "token": token, "decision": "allow"},
        headers={"X-Forwarded-For": forwarded_for},
        timeout=30,
    )


@pytest.mark.integration
@pytest.mark.timeout(300)
def test_by_default_no_forwarded_address_escapes_a_throttle(tmp_path: Path) -> None:
    env = {
        **OAUTH,
        "CCMEM_SERVER__RATE_LIMIT__LOOPBACK": "true",
        "CCMEM_SERVER__RATE_LIMIT__PER_ADDRESS": "20/minute",
    }
    with MemoryServer(tmp_path / "api", env=env) as api:
        token = api.make_token("xff-alice")
        clear_of_the_minute_edge(30)
        request = _consent_request(api.base_url)
        wrong = [
            _sign_in_on_consent(api.base_url, request, "ccm_wrong", f"203.0.113.{n}").status_code
            for n in range(1, 5)
        ]
        assert wrong == [401, 401, 401, 429]
        right = _sign_in_on_consent(api.base_url, request, token, "203.0.113.99")
        assert right.status_code == 429 and "location" not in right.headers

        # The web UI's sign-in throttle the same.
        ui_env = {"CCMEM_SERVER__RATE_LIMIT__LOGIN_FAILURES": "2/minute"}
        with UiServer(tmp_path / "ui", api.base_url, env=ui_env) as ui:
            clear_of_the_minute_edge()
            codes = [_ui_sign_in(ui, "ccm_wrong", f"192.0.2.{n}").status_code for n in range(1, 3)]
            assert codes == [400, 400]
            assert _ui_sign_in(ui, token, "192.0.2.77").status_code == 429

        # The rate limit per address counts this machine's requests (loopback: true) as one
        # address, whatever each one says it forwards.
        answers = [
            httpx.get(f"{api.base_url}/health", headers={"X-Forwarded-For": f"198.51.100.{n}"}, timeout=30)
            for n in range(30)
        ]
        assert 429 in [answer.status_code for answer in answers]


@pytest.mark.integration
@pytest.mark.timeout(300)
def test_a_trusted_proxy_forwards_the_address_that_counts(tmp_path: Path) -> None:
    env = {**OAUTH, "CCMEM_SERVER__TRUSTED_PROXIES": "[127.0.0.1]"}
    with MemoryServer(tmp_path / "api", env=env) as api:
        token = api.make_token("xff-bob")
        request = _consent_request(api.base_url)
        wrong = [
            _sign_in_on_consent(api.base_url, request, "ccm_wrong", "203.0.113.7").status_code
            for _ in range(4)
        ]
        assert wrong == [401, 401, 401, 429]
        # A client's own entry sits left of what the proxy appended: it is never read.
        spoofed = _sign_in_on_consent(api.base_url, request, token, "203.0.113.50, 203.0.113.7")
        assert spoofed.status_code == 429
        other = _sign_in_on_consent(api.base_url, request, token, "203.0.113.8")
        assert other.status_code == 302 and "code=" in other.headers["location"]

        ui_env = {
            "CCMEM_SERVER__RATE_LIMIT__LOGIN_FAILURES": "2/minute",
            "CCMEM_SERVER__TRUSTED_PROXIES": "[127.0.0.0/8]",
        }
        with UiServer(tmp_path / "ui", api.base_url, env=ui_env) as ui:
            clear_of_the_minute_edge()
            assert [_ui_sign_in(ui, "ccm_wrong", "192.0.2.1").status_code for _ in range(2)] == [400, 400]
            assert _ui_sign_in(ui, token, "192.0.2.1").status_code == 429
            assert _ui_sign_in(ui, token, "192.0.2.2").status_code == 303


def _ui_sign_in(ui: UiServer, token: str, forwarded_for: str) -> httpx.Response:
    headers = {"X-Forwarded-For": forwarded_for}
    with httpx.Client(base_url=ui.base_url, timeout=30, trust_env=False, headers=headers) as browser:
        form = browser.get("/signin")
        csrf = re.search(r'name="csrf" value="([^"]+)"', form.text)
        assert csrf, form.text
        return browser.post(
            "/signin", data={"token": token, "csrf": csrf.group(1)}, headers={"Origin": ui.base_url}
        )


def test_the_forwarded_client_is_read_right_to_left_from_trusted_proxies_only() -> None:
    from claude_code_memory.rate_limits.limiter import forwarded_client, proxy_networks

    proxies = proxy_networks(["10.0.0.0/8", "127.0.0.1"])
    assert forwarded_client("127.0.0.1", ["1.2.3.4"], ()) == "127.0.0.1"  # nobody trusted
    assert forwarded_client("192.0.2.9", ["1.2.3.4"], proxies) == "192.0.2.9"  # an untrusted peer
    assert forwarded_client("127.0.0.1", ["1.2.3.4"], proxies) == "1.2.3.4"
    assert forwarded_client("127.0.0.1", ["6.6.6.6, 1.2.3.4, 10.1.1.1"], proxies) == "1.2.3.4"
    assert forwarded_client("127.0.0.1", ["6.6.6.6", "1.2.3.4:5555"], proxies) == "1.2.3.4"
    assert forwarded_client("127.0.0.1", ["[2001:db8::1]:443"], proxies) == "2001:db8::1"
    assert forwarded_client("127.0.0.1", [], proxies) == "127.0.0.1"
    with pytest.raises(ValueError, match="not an IP"):
        proxy_networks(["caddy"])
