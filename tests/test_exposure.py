"""Beyond loopback, safely (docs/remote.md): TLS with a made certificate and a real httpx client
trusting it, the refusal of a non-loopback address without TLS, CORS for configured origins
only, 429 past the limit per token and per address, and the sign-in throttle of the web UI."""

from __future__ import annotations

import json
import os
import re
import ssl
import stat
import subprocess
from pathlib import Path

import httpx
import pytest

from claude_code_memory.auth.exposure import check_bind
from claude_code_memory.auth.tls import fingerprint, make_self_signed, same_fingerprint
from claude_code_memory.errors import ConfigError
from tests.support.processes import free_port
from tests.support.server import MemoryServer, ccmem_bin
from tests.support.servers import StartServer
from tests.support.tls_server import TlsServer
from tests.support.web_ui import UiServer
from tests.support.windows import clear_of_the_minute_edge

pytestmark = [pytest.mark.timeout(300), pytest.mark.integration]


# -- the bind check (pure) ------------------------------------------------------------------------
def test_loopback_and_tls_addresses_pass_and_others_are_refused_with_the_fix() -> None:
    assert check_bind("127.0.0.1", tls=False, insecure_bind=False) is None
    assert check_bind("::1", tls=False, insecure_bind=False) is None
    assert check_bind("0.0.0.0", tls=True, insecure_bind=False) is None
    with pytest.raises(ConfigError) as refused:
        check_bind("0.0.0.0", tls=False, insecure_bind=False)
    assert "--tls-self-signed" in refused.value.message and "--insecure-bind" in refused.value.message
    warning = check_bind("192.0.2.1", tls=False, insecure_bind=True)
    assert warning is not None and "INSECURE" in warning


def test_serve_refuses_a_non_loopback_address_without_tls(tmp_path: Path) -> None:
    # 192.0.2.1 (TEST-NET-1) is not on this machine: were the check missing, nothing could bind it
    # either, and the message would be the socket's, not ours.
    server = MemoryServer(tmp_path)
    done = subprocess.run(
        [str(ccmem_bin()), "serve", "--host", "192.0.2.1", "--port", str(free_port())],
        env=server.env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 1, done.stderr
    assert "is reachable from other machines, and TLS is off" in done.stderr
    assert "--tls-self-signed" in done.stderr and "--insecure-bind" in done.stderr


# -- TLS ------------------------------------------------------------------------------------------
def test_self_signed_tls_serves_https_to_a_client_trusting_its_certificate(tmp_path: Path) -> None:
    with TlsServer(tmp_path) as server:
        key = server.plain.data_dir / "tls" / "key.pem"
        assert stat.S_IMODE(key.stat().st_mode) == 0o600
        printed = server.printed_fingerprint()
        served = ssl.get_server_certificate(("127.0.0.1", server.port)).encode()
        assert same_fingerprint(printed, fingerprint(served))
        assert printed == fingerprint(server.cert_file.read_bytes())
        health = httpx.get(f"{server.base_url}/health", verify=server.trusting(), timeout=10)
        assert health.status_code == 200 and health.json()["service"], health.text
        localhost = httpx.get(f"https://localhost:{server.port}/health", verify=server.trusting(), timeout=10)
        assert localhost.status_code == 200  # the certificate names localhost too
        with pytest.raises(httpx.ConnectError):  # the system's CAs do not know it
            httpx.get(f"{server.base_url}/health", timeout=10)
        with pytest.raises(httpx.RemoteProtocolError):  # no plain HTTP on the port
            httpx.get(f"http://127.0.0.1:{server.port}/health", timeout=10)


def test_a_made_certificate_is_kept_and_reused(tmp_path: Path) -> None:
    first = make_self_signed(tmp_path / "tls", "127.0.0.1")
    again = make_self_signed(tmp_path / "tls", "127.0.0.1")
    assert first.fingerprint == again.fingerprint
    assert stat.S_IMODE(os.stat(first.key_file).st_mode) == 0o600


def test_a_made_key_others_can_read_is_refused_like_the_oauth_signing_key(tmp_path: Path) -> None:
    made = make_self_signed(tmp_path / "tls", "127.0.0.1")
    assert stat.S_IMODE(made.key_file.stat().st_mode) == 0o600
    made.key_file.chmod(0o644)
    with pytest.raises(ConfigError, match="readable by its owner only"):
        make_self_signed(tmp_path / "tls", "127.0.0.1")
    made.key_file.chmod(0o600)
    assert make_self_signed(tmp_path / "tls", "127.0.0.1").fingerprint == made.fingerprint


def test_the_cli_prints_a_fingerprint_as_written_never_as_emoji() -> None:
    """Rich reads ``:CD:`` as an emoji code: a fingerprint with ``...:CD:C0...`` came out with a
    disc in it and could not be pasted into ``--fingerprint`` (a CI run caught one)."""
    from claude_code_memory.cli.common import err, out

    for console in (out, err):
        with console.capture() as captured:
            console.print("AB:CD:C0:FF and :coffee:", highlight=False, soft_wrap=True)
        assert captured.get() == "AB:CD:C0:FF and :coffee:\n"


# -- CORS and rate limits (the app in process) ------------------------------------------------------
def test_cors_answers_configured_origins_only_and_never_with_credentials(start_server: StartServer) -> None:
    server = start_server(in_process=True, env={"CCMEM_SERVER__CORS_ORIGINS": "[https://app.example]"})
    preflight = {"Access-Control-Request-Method": "GET", "Access-Control-Request-Headers": "authorization"}
    with server.client() as http:
        allowed = http.options("/api/v1/memories", headers={"Origin": "https://app.example", **preflight})
        other = http.options("/api/v1/memories", headers={"Origin": "https://evil.example", **preflight})
        simple = http.get("/health", headers={"Origin": "https://evil.example"})
    assert allowed.status_code == 200
    assert allowed.headers["access-control-allow-origin"] == "https://app.example"
    assert "access-control-allow-credentials" not in allowed.headers
    assert other.status_code == 400 and "access-control-allow-origin" not in other.headers
    assert "access-control-allow-origin" not in simple.headers


def test_429_past_the_limit_per_token_with_retry_after(start_server: StartServer) -> None:
    env = {
        "CCMEM_SERVER__RATE_LIMIT__LOOPBACK": "true",
        "CCMEM_SERVER__RATE_LIMIT__PER_TOKEN": "3/minute",
        "CCMEM_SERVER__RATE_LIMIT__PER_ADDRESS": "1000/minute",
        "CCMEM_SERVER__CORS_ORIGINS": "[https://app.example]",
    }
    server = start_server(in_process=True, env=env)
    first, second = server.make_token("rl-alice"), server.make_token("rl-bob")
    clear_of_the_minute_edge()
    with server.client(first) as http:
        answers = [http.get("/api/v1/me", headers={"Origin": "https://app.example"}) for _ in range(4)]
    assert [a.status_code for a in answers] == [200, 200, 200, 429]
    assert int(answers[-1].headers["retry-after"]) >= 1
    # An allowed page sees the refusal and may read when to try again.
    assert answers[-1].headers["access-control-allow-origin"] == "https://app.example"
    assert "retry-after" in answers[-1].headers["access-control-expose-headers"].lower()
    assert answers[-1].json()["error"] == "rate_limited" and "token" in answers[-1].json()["detail"]
    with server.client(second) as http:  # another token is counted apart
        assert http.get("/api/v1/me").status_code == 200


def test_429_past_the_limit_per_address_whatever_the_token(start_server: StartServer) -> None:
    env = {
        "CCMEM_SERVER__RATE_LIMIT__LOOPBACK": "true",
        "CCMEM_SERVER__RATE_LIMIT__PER_TOKEN": "1000/minute",
        "CCMEM_SERVER__RATE_LIMIT__PER_ADDRESS": "3/minute",
    }
    server = start_server(in_process=True, env=env)
    clear_of_the_minute_edge()
    codes = []
    for index in range(4):
        with server.client(f"not-a-token-{index}") as http:
            codes.append(http.get("/api/v1/me"))
    assert [c.status_code for c in codes] == [401, 401, 401, 429]
    assert "address" in codes[-1].json()["detail"] and int(codes[-1].headers["retry-after"]) >= 1


def test_requests_from_this_machine_are_not_counted_by_default(start_server: StartServer) -> None:
    server = start_server(in_process=True, env={"CCMEM_SERVER__RATE_LIMIT__PER_TOKEN": "2/minute"})
    token = server.make_token("rl-local")
    with server.client(token) as http:
        assert {http.get("/api/v1/me").status_code for _ in range(5)} == {200}


# -- the web UI's sign-in throttle ---------------------------------------------------------------
def _sign_in(ui: UiServer, token: str) -> httpx.Response:
    with httpx.Client(base_url=ui.base_url, timeout=30, trust_env=False) as browser:
        form = browser.get("/signin")
        csrf = re.search(r'name="csrf" value="([^"]+)"', form.text)
        assert csrf, form.text
        return browser.post(
            "/signin", data={"token": token, "csrf": csrf.group(1)}, headers={"Origin": ui.base_url}
        )


def test_the_ui_sign_in_slows_an_address_after_repeated_failures(tmp_path: Path) -> None:
    with MemoryServer(tmp_path / "api") as api:
        token = api.make_token("throttled")
        with UiServer(tmp_path / "ui", api.base_url) as ui:
            assert _sign_in(ui, token).status_code == 303  # a good token signs in
        # Two failures allowed per minute: the third attempt waits, even with the right token.
        env = {"CCMEM_SERVER__RATE_LIMIT__LOGIN_FAILURES": "2/minute"}
        with UiServer(tmp_path / "ui2", api.base_url, env=env) as ui:
            clear_of_the_minute_edge()
            assert [_sign_in(ui, "ccm_wrong").status_code for _ in range(2)] == [400, 400]
            waited = _sign_in(ui, token)
            assert waited.status_code == 429, waited.text
            assert "Too many failed sign-ins" in waited.text and int(waited.headers["retry-after"]) >= 1


def test_doctor_fails_a_non_loopback_address_without_tls_and_passes_it_with_tls(tmp_path: Path) -> None:
    server = MemoryServer(tmp_path)
    for flags, status in ((["--host", "0.0.0.0"], "fail"), (["--port", str(free_port())], "ok")):
        done = server.ccmem("doctor", "--json", *flags, check=False)
        exposure = next(c for c in json.loads(done.stdout)["checks"] if c["name"] == "exposure")
        assert exposure["status"] == status, exposure
    env = {**server.env, "CCMEM_SERVER__TLS__SELF_SIGNED": "true", "CCMEM_SERVER__HOST": "0.0.0.0"}
    done = subprocess.run(
        [str(ccmem_bin()), "doctor", "--json"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    exposure = next(c for c in json.loads(done.stdout)["checks"] if c["name"] == "exposure")
    assert exposure["status"] == "ok" and "HTTPS" in exposure["detail"]
