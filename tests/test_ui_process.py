"""``ccmem ui`` as a process: configured by flags or by ``CCMEM_UI__*`` variables (as in the
containers), stopped cleanly by SIGTERM, cookies and CSRF over plain HTTP, headers, and a log
that never holds the user's token."""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.processes import free_port
from tests.support.server import MemoryServer
from tests.support.web_ui import UiServer

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MemoryServer]:
    with MemoryServer(tmp_path_factory.mktemp("ui-process-api")) as server:
        yield server


def sign_in(client: httpx.Client, token: str) -> httpx.Response:
    form = client.get("/signin")
    csrf = re.search(r'name="csrf" value="([^"]+)"', form.text)
    assert csrf, form.text
    return client.post("/signin", data={"token": token, "csrf": csrf.group(1), "next": "/memories"})


def page_csrf(client: httpx.Client, path: str = "/settings") -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', client.get(path).text)
    assert found
    return found.group(1)


def test_environment_configures_it_sigterm_stops_it_and_the_log_has_no_token(
    api: MemoryServer, tmp_path: Path
) -> None:
    user = f"olga-{uuid.uuid4().hex[:6]}"
    token = api.make_token(user)
    ui = UiServer(tmp_path / "ui", api.base_url, flags=False).start()
    try:
        with httpx.Client(base_url=ui.base_url, timeout=30) as client:
            signed = sign_in(client, token)
            assert signed.status_code == 303 and signed.headers["location"] == "/memories"
            cookie = next(h for h in signed.headers.get_list("set-cookie") if h.startswith("ccmem_session="))
            assert "HttpOnly" in cookie and "SameSite=strict" in cookie and "Secure" not in cookie
            assert token not in cookie
            listing = client.get("/memories")
            assert listing.status_code == 200 and user in listing.text
            for name in ("Content-Security-Policy", "X-Content-Type-Options", "X-Frame-Options"):
                assert name in listing.headers
            assert listing.headers["Cache-Control"] == "no-store"
            # A page that fails in the API (unknown memory), and a token-bearing page.
            assert client.get(f"/memories/{uuid.uuid4()}").status_code == 404
            assert token not in client.get("/connect").text  # until asked
            assert token in client.post("/connect", data={"csrf": page_csrf(client, "/connect")}).text
    finally:
        code = ui.stop()
    assert code == 0, ui.log()
    log = ui.log()
    assert "Uvicorn running" in log or "listening" in log or "UI on" in log
    assert token not in log and token[4:20] not in log


def test_secure_cookies_setting_marks_the_cookie_secure(api: MemoryServer, tmp_path: Path) -> None:
    token = api.make_token(f"pia-{uuid.uuid4().hex[:6]}")
    with (
        UiServer(tmp_path / "ui", api.base_url, env={"CCMEM_UI__SECURE_COOKIES": "true"}) as ui,
        httpx.Client(base_url=ui.base_url, timeout=30) as client,
    ):
        # httpx does not send Secure cookies over http: read the Set-Cookie line instead.
        signin = client.get("/signin")
        assert "Secure" in signin.headers["set-cookie"]
        csrf = re.search(r'name="csrf" value="([^"]+)"', signin.text)
        assert csrf
        client.cookies.set("ccmem_signin", signin.cookies["ccmem_signin"])
        response = client.post("/signin", data={"token": token, "csrf": csrf.group(1)})
        assert response.status_code == 303
        session = next(h for h in response.headers.get_list("set-cookie") if h.startswith("ccmem_session="))
        assert "Secure" in session


def test_sign_in_form_needs_its_csrf_token_and_redirects_stay_local(
    api: MemoryServer, tmp_path: Path
) -> None:
    token = api.make_token(f"quin-{uuid.uuid4().hex[:6]}")
    with (
        UiServer(tmp_path / "ui", api.base_url) as ui,
        httpx.Client(base_url=ui.base_url, timeout=30) as client,
    ):
        client.get("/signin")
        refused = client.post("/signin", data={"token": token, "csrf": "wrong"})
        assert refused.status_code == 403 and "ccmem_session" not in refused.headers.get("set-cookie", "")
        form = client.get("/signin?next=https://evil.example/")
        assert 'name="next" value="/"' in form.text
        csrf = re.search(r'name="csrf" value="([^"]+)"', form.text)
        assert csrf
        signed = client.post(
            "/signin", data={"token": token, "csrf": csrf.group(1), "next": "//evil.example/"}
        )
        assert signed.headers["location"] == "/"
        # Signed in; sign-out needs the CSRF token too, then the session is gone.
        assert client.post("/signout", data={}).status_code == 403
        assert client.get("/").status_code == 200
        out = client.post("/signout", data={"csrf": page_csrf(client)})
        assert out.status_code == 303 and out.headers["location"] == "/signin"
        assert client.get("/").headers["location"].startswith("/signin")


def test_a_revoked_token_ends_the_session(api: MemoryServer, tmp_path: Path) -> None:
    user = f"rosa-{uuid.uuid4().hex[:6]}"
    token = api.make_token(user)
    with (
        UiServer(tmp_path / "ui", api.base_url) as ui,
        httpx.Client(base_url=ui.base_url, timeout=30) as client,
    ):
        sign_in(client, token)
        assert client.get("/").status_code == 200
        api.ccmem("token", "revoke", token[:12], "--data-dir", str(api.data_dir))
        ended = client.get("/")
        assert ended.status_code == 303 and ended.headers["location"] == "/signin"
        assert "sign in again" in client.get("/signin").text


def test_revoking_the_sessions_own_token_signs_out(api: MemoryServer, tmp_path: Path) -> None:
    token = api.make_token(f"sam-{uuid.uuid4().hex[:6]}")
    headers = {"Authorization": f"Bearer {token}"}
    [mine] = httpx.get(f"{api.base_url}/api/v1/tokens", headers=headers).json()["tokens"]
    with (
        UiServer(tmp_path / "ui", api.base_url) as ui,
        httpx.Client(base_url=ui.base_url, timeout=30) as client,
    ):
        sign_in(client, token)
        settings = client.get("/settings")
        assert "this session" in settings.text
        revoked = client.post(f"/settings/tokens/{mine['id']}/revoke", data={"csrf": page_csrf(client)})
        assert revoked.status_code == 303 and revoked.headers["location"] == "/signin"
        assert 'ccmem_session=""' in revoked.headers.get("set-cookie", "")
        assert httpx.get(f"{api.base_url}/api/v1/me", headers=headers).status_code == 401


@pytest.mark.integration
def test_an_api_that_is_not_there_at_sign_in(tmp_path: Path) -> None:
    dead = f"http://127.0.0.1:{free_port()}"
    with UiServer(tmp_path / "ui", dead) as ui, httpx.Client(base_url=ui.base_url, timeout=30) as client:
        response = sign_in(client, "ccm_anything")
        assert response.status_code == 503
        assert "not available" in response.text and "Traceback" not in response.text


def test_a_signed_out_cookie_is_refused_even_after_a_restart(api: MemoryServer, tmp_path: Path) -> None:
    """Sign-out ends that session on the server: a copy of its cookie no longer opens pages or
    posts forms, also once the UI has restarted (with the same secret). Another browser's
    session of the same user goes on: sign-out is per session, revoking the token is for all."""
    user = f"tove-{uuid.uuid4().hex[:6]}"
    token = api.make_token(user)
    ui = UiServer(tmp_path / "ui", api.base_url).start()
    try:
        with (
            httpx.Client(base_url=ui.base_url, timeout=30) as laptop,
            httpx.Client(base_url=ui.base_url, timeout=30) as phone,
        ):
            sign_in(laptop, token)
            sign_in(phone, token)
            copied = laptop.cookies["ccmem_session"]
            csrf = page_csrf(laptop)
            out = laptop.post("/signout", data={"csrf": csrf})
            assert out.status_code == 303 and out.headers["location"] == "/signin"

            def replay(method: str, path: str, **kwargs: object) -> httpx.Response:
                with httpx.Client(base_url=ui.base_url, timeout=30) as thief:
                    thief.cookies.set("ccmem_session", copied)
                    return thief.request(method, path, **kwargs)  # type: ignore[arg-type]

            for path in ("/", "/memories", "/connect", "/settings"):
                refused = replay("GET", path)
                assert refused.status_code == 303, path
                assert refused.headers["location"].startswith("/signin"), path
                assert token not in refused.text
            posted = replay("POST", "/settings/tokens", data={"csrf": csrf, "name": "stolen"})
            assert posted.status_code == 303 and posted.headers["location"].startswith("/signin")
            assert phone.get("/memories").status_code == 200

            ui.stop()
            ui.start()
            assert replay("GET", "/memories").headers["location"].startswith("/signin")
            assert phone.get("/memories").status_code == 200
        names = [
            t["name"]
            for t in httpx.get(
                f"{api.base_url}/api/v1/tokens", headers={"Authorization": f"Bearer {token}"}
            ).json()["tokens"]
        ]
        assert "stolen" not in names
    finally:
        ui.stop()


@pytest.mark.integration
def test_connect_leads_with_the_hooks_and_the_dashboard_counts_their_work(
    api: MemoryServer, tmp_path: Path
) -> None:
    user = f"quinn-{uuid.uuid4().hex[:6]}"
    token = api.make_token(user)
    headers = {"Authorization": f"Bearer {token}"}
    cwd = str(tmp_path / "shop")  # a session there is of the project "shop", its folder's name
    for text in ("The shop deploys on Fridays", "The shop's database is Postgres"):
        added = httpx.post(
            f"{api.base_url}/api/v1/memories", json={"text": text, "project": "shop"}, headers=headers
        )
        assert added.status_code == 200, added.text
    for event in (
        {"hook_event_name": "SessionStart", "source": "startup"},
        {"hook_event_name": "UserPromptSubmit", "prompt": "Remember: tea at four"},
        {"hook_event_name": "Stop", "last_assistant_message": "Noted."},
    ):
        body = {"session_id": "s1", "cwd": cwd, "transcript_path": "/dev/null", **event}
        answered = httpx.post(f"{api.base_url}/api/v1/hooks/claude-code", json=body, headers=headers)
        assert answered.status_code == 200, answered.text
    with (
        UiServer(tmp_path / "ui", api.base_url) as ui,
        httpx.Client(base_url=ui.base_url, timeout=30) as client,
    ):
        assert sign_in(client, token).status_code == 303
        dashboard = client.get("/").text
        assert re.search(r'data-testid="hook-injections">2<', dashboard), dashboard
        assert re.search(r'data-testid="hook-captures">1<', dashboard), dashboard
        # It leads with `ccmem connect claude-code`; the token waits until asked.
        page = client.get("/connect").text
        assert page.index("ccmem connect claude-code<") < page.index('id="reveal-token"')
        assert token not in page and "CCMEM_TOKEN=" not in page
        # Without the CSRF token (or from another site) the page with the token is refused.
        assert client.post("/connect", data={}).status_code == 403
        connect = client.post("/connect", data={"csrf": page_csrf(client, "/connect")}).text
        setup = connect.index("ccmem hooks install --url ")
        assert connect.index(f"export CCMEM_TOKEN={token}") < setup
        assert setup < connect.index("claude mcp add --scope user --transport http memory ")
        assert "Authorization: Bearer $CCMEM_TOKEN" in connect
        assert connect.index('id="cc-setup"') < connect.index('id="cd-json"')  # Claude Code first
        # Whether the stack's capture proxy can capture for this user: its token, by name. Said
        # plainly, with no alarm: Claude Code's hooks capture without it.
        assert "capture proxy has no token of yours" in page and "does not work" not in page
        assert "Claude Code needs no proxy" in page
        made = httpx.post(
            f"{api.base_url}/api/v1/tokens", json={"name": "capture proxy (ccmem stack up)"}, headers=headers
        )
        assert made.status_code == 201, made.text
        assert "capture proxy has a token of yours" in client.get("/connect").text
        # What browsers and uptime checks ask for first: no 404, no 405.
        icon = client.get("/favicon.ico")
        assert icon.status_code == 200 and icon.headers["content-type"].startswith("image/svg+xml")
        assert client.head("/").status_code == 200
        with httpx.Client(base_url=ui.base_url, timeout=30) as anonymous:
            assert anonymous.head("/").status_code == 303  # to the sign-in page, as GET does
