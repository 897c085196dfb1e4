"""Devices (docs/remote.md): named tokens and authorised OAuth clients, listed with their last use
and revoked at once, over REST, in the CLI and in the web UI (Debian's Chromium through
Playwright); the OAuth consent page's sign-in throttle; and ``ccmem connect claude-code --server``
against a real TLS server, pinned by fingerprint."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import anyio
import httpx
import pytest

from tests.support import oauth_flow
from tests.support.processes import require_tool
from tests.support.server import MemoryServer, ccmem_bin
from tests.support.tls_server import TlsServer
from tests.support.web_ui import UiServer
from tests.support.windows import clear_of_the_minute_edge

pytestmark = [pytest.mark.timeout(600), pytest.mark.integration]

OAUTH_ENV = {"CCMEM_AUTH__OAUTH__ENABLED": "true", "CCMEM_AUTH__OAUTH__ALLOW_LOOPBACK_CLIENT_IDS": "true"}
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MemoryServer]:
    with MemoryServer(tmp_path_factory.mktemp("devices"), env=OAUTH_ENV) as running:
        yield running


def _token(server: MemoryServer, user: str, name: str) -> dict[str, Any]:
    answer = httpx.post(
        f"{server.base_url}/api/v1/tokens",
        json={"user_id": user, "name": name},
        headers=server.admin_headers(),
        timeout=30,
    )
    assert answer.status_code == 201, answer.text
    return dict(answer.json())


def _devices(server: MemoryServer, token: str) -> list[dict[str, Any]]:
    with server.client(token) as http:
        answer = http.get("/api/v1/devices")
    assert answer.status_code == 200, answer.text
    return list(answer.json()["devices"])


def test_devices_list_named_tokens_with_last_use_and_a_revoked_one_fails_at_once(
    server: MemoryServer,
) -> None:
    laptop, desktop = _token(server, "dev-ann", "laptop"), _token(server, "dev-ann", "desktop")
    listed = {d["name"]: d for d in _devices(server, laptop["token"])}
    assert set(listed) == {"laptop", "desktop"}
    assert listed["laptop"]["kind"] == "token" and listed["laptop"]["prefix"] == laptop["prefix"]
    assert listed["laptop"]["last_used_at"] is not None  # this very request
    assert listed["desktop"]["last_used_at"] is None
    # Within a minute another use writes nothing: the last use stays as it was.
    again = {d["name"]: d for d in _devices(server, laptop["token"])}
    assert again["laptop"]["last_used_at"] == listed["laptop"]["last_used_at"]

    with server.client(_token(server, "dev-bob", "bob's")["token"]) as other:
        assert other.delete(f"/api/v1/devices/{desktop['id']}").status_code == 404  # not bob's
    with server.client(desktop["token"]) as http:
        assert http.get("/api/v1/me").status_code == 200
    with server.client(laptop["token"]) as http:
        revoked = http.delete(f"/api/v1/devices/{desktop['id']}")
    assert revoked.status_code == 200 and revoked.json()["status"] == "revoked"
    with server.client(desktop["token"]) as http:
        assert http.get("/api/v1/me").status_code == 401
    assert [d["name"] for d in _devices(server, laptop["token"])] == ["laptop"]


def test_an_authorised_oauth_client_is_a_device_and_revoking_it_ends_its_access(server: MemoryServer) -> None:
    user_token = _token(server, "dev-cy", "cy's laptop")["token"]
    tokens = anyio.run(lambda: oauth_flow.raw_flow(server.base_url, user_token, scope="memory:read"))
    bearer = {"Authorization": f"Bearer {tokens.access_token}"}
    assert httpx.get(f"{server.base_url}/api/v1/me", headers=bearer, timeout=30).status_code == 200
    oauth = [d for d in _devices(server, user_token) if d["kind"] == "oauth"]
    assert len(oauth) == 1, oauth
    assert oauth[0]["name"] == "raw test client" and oauth[0]["scopes"] == ["memory:read"]
    assert oauth[0]["client_id"] == tokens.client_id and oauth[0]["last_used_at"] is not None
    # An application cannot see or revoke the user's other devices: that takes ``admin``.
    listing = httpx.get(f"{server.base_url}/api/v1/devices", headers=bearer, timeout=30)
    assert listing.status_code == 403 and "insufficient_scope" in listing.headers["www-authenticate"]
    with server.client(user_token) as http:
        assert http.delete(f"/api/v1/devices/{oauth[0]['id']}").status_code == 200
    refused = httpx.get(f"{server.base_url}/api/v1/me", headers=bearer, timeout=30)
    assert refused.status_code == 401 and "invalid_token" in refused.headers["www-authenticate"]
    refresh = httpx.post(
        f"{server.base_url}/token",
        data={
            "grant_type": "refresh_token",
            "refresh_token": tokens.refresh_token,
            "client_id": tokens.client_id,
        },
        timeout=30,
    )
    assert refresh.status_code == 400, refresh.text


def test_ccmem_devices_lists_and_revokes(server: MemoryServer) -> None:
    phone = _token(server, "dev-di", "phone")
    listed = json.loads(server.ccmem("devices", "list", "--user", "dev-di", "--json").stdout)
    assert [(d["name"], d["kind"], d["prefix"]) for d in listed] == [("phone", "token", phone["prefix"])]
    table = server.ccmem("devices", "list", "--user", "dev-di").stdout
    assert "phone" in table and phone["prefix"] in table
    server.ccmem("devices", "revoke", phone["prefix"], "--user", "dev-di")
    with server.client(phone["token"]) as http:
        assert http.get("/api/v1/me").status_code == 401
    missing = server.ccmem("devices", "revoke", phone["prefix"], "--user", "dev-other", check=False)
    assert missing.returncode == 1 and "no device" in missing.stderr
    assert json.loads(server.ccmem("devices", "list", "--user", "dev-di", "--json").stdout) == []


# -- the OAuth consent page's throttle ---------------------------------------------------------------
def test_the_consent_page_slows_an_address_after_repeated_failed_sign_ins(tmp_path: Path) -> None:
    env = OAUTH_ENV | {"CCMEM_SERVER__RATE_LIMIT__LOGIN_FAILURES": "2/minute"}
    with MemoryServer(tmp_path, env=env) as api, httpx.Client(timeout=30, trust_env=False) as browser:
        good = api.make_token("consenter")
        client_id = browser.post(
            f"{api.base_url}/register",
            json={"client_name": "throttle client", "redirect_uris": [oauth_flow.REDIRECT_URI]},
        ).json()["client_id"]
        query = {
            "response_type": "code",
            "client_id": client_id,
            "redirect_uri": oauth_flow.REDIRECT_URI,
            "code_challenge": "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM",
            "code_challenge_method": "S256",
            "scope": "memory:read",
            "resource": api.base_url,
        }
        consent = browser.get(f"{api.base_url}/authorize?{urlencode(query)}").headers["location"]
        blob = re.search(r'name="request" value="([^"]+)"', browser.get(consent).text)
        assert blob

        def sign_in(token: str) -> httpx.Response:
            form = {"request": blob.group(1), "token": token, "decision": "allow"}
            return browser.post(f"{api.base_url}/oauth/consent", data=form)

        clear_of_the_minute_edge()
        assert [sign_in("ccm_wrong").status_code for _ in range(2)] == [401, 401]
        waited = sign_in(good)
        assert waited.status_code == 429 and "Too many failed sign-ins" in waited.text
        assert int(waited.headers["retry-after"]) >= 1


# -- the web UI's Devices page ------------------------------------------------------------------------
def test_the_devices_page_lists_and_revokes_in_a_real_browser(server: MemoryServer, tmp_path: Path) -> None:
    require_tool(CHROMIUM, "the browser for UI tests: apt-get install -y chromium")
    from playwright.sync_api import sync_playwright

    session = _token(server, "dev-eve", "eve's browser")
    spare = _token(server, "dev-eve", "old desktop")
    with UiServer(tmp_path / "ui", server.base_url) as ui, sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            page = chromium.new_context(base_url=ui.base_url).new_page()
            page.set_default_timeout(20_000)
            page.on("dialog", lambda dialog: dialog.accept())
            page.goto("/signin")
            page.get_by_label("Token").fill(session["token"])
            page.get_by_role("button", name="Sign in").click()
            page.get_by_role("link", name="Devices").click()
            page.wait_for_url("**/devices")
            rows = page.locator("tbody tr")
            assert rows.count() == 2
            mine = rows.filter(has_text="eve's browser")
            assert "this session" in mine.inner_text() and "never" not in mine.inner_text()
            assert "never" in rows.filter(has_text="old desktop").inner_text()
            page.get_by_role("button", name="Revoke old desktop").click()
            page.wait_for_url("**/devices")
            assert "Revoked old desktop" in page.content()
            assert page.locator("tbody tr").count() == 1
        finally:
            chromium.close()
    with server.client(spare["token"]) as http:
        assert http.get("/api/v1/me").status_code == 401


# -- ccmem connect claude-code --server -----------------------------------------------------------
def _second_machine(tmp_path: Path) -> dict[str, str]:
    """A clean environment standing for another machine: its own HOME, config and data."""
    home = tmp_path / "laptop-home"
    home.mkdir(parents=True)
    config = tmp_path / "laptop.yaml"
    config.write_text(f"server:\n  data_dir: {tmp_path / 'laptop-data'}\n", encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("CCMEM_")}
    return env | {"HOME": str(home), "CCMEM_CONFIG": str(config), "NO_PROXY": "127.0.0.1,localhost"}


def test_connect_server_pins_the_fingerprint_and_writes_hooks_that_reach_it(tmp_path: Path) -> None:
    with TlsServer(tmp_path / "server") as remote:
        token = remote.make_token("dev-fay", "laptop")
        env = _second_machine(tmp_path)
        base = ["connect", "claude-code", "--server", remote.base_url, "--token", token]
        base += ["--claude", str(tmp_path / "no-claude-here")]

        def connect(*extra: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run(
                [str(ccmem_bin()), *base, *extra],
                env=env,
                capture_output=True,
                text=True,
                timeout=180,
                check=False,
            )

        wrong = connect("--fingerprint", "AA:" * 31 + "AA")
        assert wrong.returncode == 1 and "not connecting" in wrong.stderr, wrong.stderr
        settings_file = Path(env["HOME"]) / ".claude" / "settings.json"
        assert not settings_file.exists()

        done = connect("--fingerprint", remote.printed_fingerprint().lower())
        assert done.returncode == 0, done.stdout + done.stderr
        assert "round trip ok" in done.stdout
        settings = json.loads(settings_file.read_text())
        pinned = tmp_path / "laptop-data" / "connect" / "server-ca.pem"
        assert pinned.read_bytes() == remote.cert_file.read_bytes()
        assert settings["env"]["NODE_EXTRA_CA_CERTS"] == str(pinned)
        command = settings["hooks"]["UserPromptSubmit"][0]["hooks"][0]["command"]
        assert remote.base_url in command and str(pinned) in command
        token_file = tmp_path / "laptop-data" / "connect" / "claude-code.token"
        assert token_file.read_text().strip() == token and (token_file.stat().st_mode & 0o077) == 0

        # The hook Claude Code would run reaches the TLS server with the pinned certificate.
        remembered = httpx.post(
            f"{remote.base_url}/api/v1/memories",
            json={"text": "The laptop's deploy target is the staging cluster fay-7.", "infer": False},
            headers={"Authorization": f"Bearer {token}"},
            verify=remote.trusting(),
            timeout=60,
        )
        assert remembered.status_code < 300, remembered.text
        hook_input = {
            "hook_event_name": "UserPromptSubmit",
            "session_id": "laptop-session",
            "cwd": str(tmp_path),
            "prompt": "Which staging cluster is the laptop's deploy target?",
        }
        ran = subprocess.run(
            shlex.split(command),
            input=json.dumps(hook_input),
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert "fay-7" in ran.stdout, ran.stdout + ran.stderr

        # --undo takes the hooks and the settings back out; --ca-file trusts a given certificate.
        assert connect("--undo").returncode == 0
        assert "NODE_EXTRA_CA_CERTS" not in (settings_file.read_text() if settings_file.exists() else "")
        again = connect("--ca-file", str(remote.cert_file))
        assert again.returncode == 0 and "round trip ok" in again.stdout, again.stdout + again.stderr
        assert json.loads(settings_file.read_text())["env"]["NODE_EXTRA_CA_CERTS"] == str(pinned)
        with httpx.Client(verify=remote.trusting(), headers={"Authorization": f"Bearer {token}"}) as http:
            assert http.get(f"{remote.base_url}/api/v1/me").status_code == 200  # the token still works
