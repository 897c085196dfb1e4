"""The OAuth surfaces anyone may call without credentials (docs/oauth.md), against a real
``ccmem serve``: dynamic registration's limits (every field's size, the body's, unused clients
per address and in all, their expiry), which redirect URIs a client may name (registration,
metadata documents, the consent page's Deny), and the metadata document fetch (one deadline
for the whole fetch; the address that was checked is the one connected to). Pure parts at the
end."""

from __future__ import annotations

import json
import socket
import sqlite3
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import anyio
import httpx
import jwt
import pytest

from claude_code_memory.auth.oauth import keys
from tests.support.fake_oidc import JsonServer
from tests.support.oauth_flow import REDIRECT_URI, consent
from tests.support.server import MemoryServer

pytestmark = pytest.mark.timeout(300)

OAUTH_ENV = {"CCMEM_AUTH__OAUTH__ENABLED": "true", "CCMEM_AUTH__OAUTH__ALLOW_LOOPBACK_CLIENT_IDS": "true"}
CHALLENGE = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"


@pytest.fixture(scope="module")
def oauth_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MemoryServer]:
    # Clients come "from" addresses the test names, through a trusted proxy (itself).
    env = {**OAUTH_ENV, "CCMEM_SERVER__TRUSTED_PROXIES": "[127.0.0.1]"}
    with MemoryServer(tmp_path_factory.mktemp("oauth-registration"), env=env) as server:
        yield server


def register(server: MemoryServer, metadata: dict[str, Any], address: str = "192.0.2.1") -> httpx.Response:
    return httpx.post(
        f"{server.base_url}/register", json=metadata, headers={"X-Forwarded-For": address}, timeout=30
    )


def client_rows(server: MemoryServer) -> int:
    database = sqlite3.connect(server.data_dir / "memory.db")
    try:
        return int(database.execute("SELECT count(*) FROM oauth_clients").fetchone()[0])
    finally:
        database.close()


# -- registration ---------------------------------------------------------------------------
def test_every_field_of_a_registration_is_capped_and_nothing_is_stored_on_refusal(
    oauth_server: MemoryServer,
) -> None:
    before = client_rows(oauth_server)
    good = {"client_name": "ok", "redirect_uris": [REDIRECT_URI]}
    refused = {
        "a 1.9 MB client_name": ({**good, "client_name": "x" * 1_900_000}, 413, "invalid_client_metadata"),
        "5,000 redirect URIs": (
            {"redirect_uris": [f"http://127.0.0.1:9/cb{n}" for n in range(5000)]},
            413,
            "invalid_client_metadata",
        ),
        "a 201-character client_name": ({**good, "client_name": "x" * 201}, 400, "invalid_client_metadata"),
        "11 redirect URIs": (
            {"redirect_uris": [f"http://127.0.0.1:9/cb{n}" for n in range(11)]},
            400,
            "invalid_redirect_uri",
        ),
        "a 2,001-character redirect URI": (
            {"redirect_uris": ["https://app.example/" + "x" * 1981]},
            400,
            "invalid_redirect_uri",
        ),
        "a long software_id": ({**good, "software_id": "s" * 500}, 400, "invalid_client_metadata"),
        "a long client_uri": (
            {**good, "client_uri": "https://app.example/" + "x" * 2000},
            400,
            "invalid_client_metadata",
        ),
        "11 contacts": (
            {**good, "contacts": [f"a{n}@example.com" for n in range(11)]},
            400,
            "invalid_client_metadata",
        ),
        "a 10 KB jwks": ({**good, "jwks": {"keys": [{"k": "x" * 10_000}]}}, 400, "invalid_client_metadata"),
        "an unknown field of 20 KB": ({**good, "extra": "x" * 20_000}, 413, "invalid_client_metadata"),
    }
    for name, (metadata, status, error) in refused.items():
        answer = register(oauth_server, metadata)
        assert answer.status_code == status, (name, answer.status_code, answer.text[:300])
        assert answer.json()["error"] == error, name
        assert answer.json()["error_description"], name
    assert client_rows(oauth_server) == before


@pytest.mark.parametrize(
    "uri",
    [
        "javascript:alert(document.domain)//",
        "JavaScript:alert(1)",
        "data:text/html,<script>alert(1)</script>",
        "vbscript:msgbox(1)",
        "file:///etc/passwd",
        "blob:https://app.example/1234",
        "http://evil.example/cb",
        "https://app.example/cb#fragment",
        "https://user:pass@app.example/cb",
        "ws://127.0.0.1:9/cb",
        "not a uri",
    ],
)
def test_registration_refuses_redirect_uris_a_browser_would_act_on(
    oauth_server: MemoryServer, uri: str
) -> None:
    before = client_rows(oauth_server)
    answer = register(oauth_server, {"redirect_uris": [uri]}, address="192.0.2.2")
    assert answer.status_code == 400, answer.text
    assert answer.json()["error"] in ("invalid_redirect_uri", "invalid_client_metadata")
    assert client_rows(oauth_server) == before


def test_registration_keeps_native_app_and_loopback_redirect_uris(oauth_server: MemoryServer) -> None:
    for uri in (
        REDIRECT_URI,
        "http://localhost/callback",
        "http://[::1]:8080/cb",
        "https://claude.ai/api/mcp/auth_callback",
        "com.example.app:/oauth2redirect",
        "cursor://anysphere.cursor-mcp/oauth/callback",
    ):
        answer = register(
            oauth_server, {"client_name": "native", "redirect_uris": [uri]}, address="192.0.2.3"
        )
        assert answer.status_code == 201, (uri, answer.text)


@pytest.mark.integration
def test_unused_registrations_are_capped_per_address_and_in_all_and_expire(tmp_path: Path) -> None:
    env = {
        **OAUTH_ENV,
        "CCMEM_SERVER__TRUSTED_PROXIES": "[127.0.0.1]",
        "CCMEM_AUTH__OAUTH__REGISTRATION__MAX_UNUSED_CLIENTS_PER_ADDRESS": "3",
        "CCMEM_AUTH__OAUTH__REGISTRATION__MAX_UNUSED_CLIENTS": "5",
        "CCMEM_AUTH__OAUTH__REGISTRATION__UNUSED_CLIENT_HOURS": "1",
    }
    metadata = {"client_name": "capped", "redirect_uris": [REDIRECT_URI]}
    with MemoryServer(tmp_path / "capped", env=env) as server:
        first = [register(server, metadata, "198.51.100.1") for _ in range(4)]
        assert [answer.status_code for answer in first] == [201, 201, 201, 429]
        assert first[-1].json()["error"] == "temporarily_unavailable"
        assert "from your address" in first[-1].json()["error_description"]
        assert 1 <= int(first[-1].headers["retry-after"]) <= 3600
        assert client_rows(server) == 3

        # Another address has its own share, up to the total.
        second = [register(server, metadata, "198.51.100.2").status_code for _ in range(3)]
        assert second == [201, 201, 429]
        assert "on this server" in register(server, metadata, "198.51.100.3").json()["error_description"]
        assert client_rows(server) == 5

        # Authorizing a client (a code was issued) takes it out of the count for good.
        user_token = server.make_token("reg-alice")
        used = first[0].json()["client_id"]
        params = {
            "response_type": "code",
            "client_id": used,
            "redirect_uri": REDIRECT_URI,
            "code_challenge": CHALLENGE,
            "state": "s",
        }
        back = anyio.run(
            lambda: consent(f"{server.base_url}/authorize?{httpx.QueryParams(params)}", user_token)
        )
        assert "code" in back
        assert register(server, metadata, "198.51.100.1").status_code == 201

        # An unused client older than unused_client_hours goes at the next registration; a used
        # one stays.
        stale = first[1].json()["client_id"]
        database = sqlite3.connect(server.data_dir / "memory.db")
        with database:
            database.execute(
                "UPDATE oauth_clients SET created_at = datetime(created_at, '-2 hours') "
                "WHERE client_id IN (?, ?)",
                (stale, used),
            )
        database.close()
        assert register(server, metadata, "198.51.100.4").status_code == 201
        ids = _client_ids(server)
        assert stale not in ids and used in ids
        gone = httpx.get(f"{server.base_url}/authorize", params={**params, "client_id": stale}, timeout=30)
        assert gone.status_code == 400


def _client_ids(server: MemoryServer) -> set[str]:
    database = sqlite3.connect(server.data_dir / "memory.db")
    try:
        return {row[0] for row in database.execute("SELECT client_id FROM oauth_clients")}
    finally:
        database.close()


# -- redirect URIs in metadata documents and on the consent page ---------------------------------
def test_metadata_documents_with_unchecked_redirect_uris_name_no_client(oauth_server: MemoryServer) -> None:
    with JsonServer() as documents:
        for n, uri in enumerate(
            (
                "javascript:alert(document.domain)//",
                "data:text/html,x",
                "file:///etc/passwd",
                "http://evil.example/cb",
                "vbscript:msgbox(1)",
            )
        ):
            path = f"/c{n}.json"
            client_id = f"{documents.base_url}{path}"
            documents.documents[path] = {"client_id": client_id, "redirect_uris": [uri]}
            authorize = httpx.get(
                f"{oauth_server.base_url}/authorize",
                params={
                    "response_type": "code",
                    "client_id": client_id,
                    "redirect_uri": uri,
                    "code_challenge": CHALLENGE,
                },
                timeout=30,
            )
            assert authorize.status_code == 400 and "location" not in authorize.headers, (uri, authorize.text)


def test_deny_never_sends_the_browser_to_an_unchecked_uri(oauth_server: MemoryServer) -> None:
    base = oauth_server.base_url
    client_id = register(oauth_server, {"redirect_uris": [REDIRECT_URI]}, address="192.0.2.5").json()[
        "client_id"
    ]
    key = keys.load_or_create(oauth_server.data_dir)
    for uri in ("javascript:alert(document.domain)//", "data:text/html,x", "http://evil.example/cb"):
        # A request the server itself signed, naming a URI that a record stored before the checks
        # could hold: the consent page's decision must not follow it.
        claims = {
            "typ": "ccmem-consent+jwt",
            "client_id": client_id,
            "redirect_uri": uri,
            "redirect_uri_explicit": True,
            "scopes": ["memory:read"],
            "state": "s",
            "code_challenge": CHALLENGE,
            "resource": base,
            "iss": base,
            "aud": base + "/oauth/consent",
            "exp": int(time.time()) + 300,
        }
        blob = jwt.encode(claims, key.private, algorithm=keys.ALGORITHM)
        denied = httpx.post(f"{base}/oauth/consent", data={"request": blob, "decision": "deny"}, timeout=30)
        assert denied.status_code == 400 and "location" not in denied.headers, (uri, denied.headers)


# -- the document fetch ----------------------------------------------------------------------------
class _SlowDocument:
    """Serves a valid metadata document one byte every ``interval`` seconds."""

    def __init__(self, interval: float) -> None:
        self.interval = interval
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
                body = json.dumps({"client_id": outer.url, "redirect_uris": [REDIRECT_URI]}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                try:
                    for byte in body:
                        self.wfile.write(bytes([byte]))
                        self.wfile.flush()
                        time.sleep(outer.interval)
                except OSError:
                    pass

            def log_message(self, *args: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/slow.json"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> _SlowDocument:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


@pytest.mark.integration
def test_a_document_sent_slowly_fails_within_one_deadline_for_the_whole_fetch() -> None:
    from claude_code_memory.auth.oauth.client_metadata import ClientMetadataError, ClientMetadataFetcher

    # Each byte comes well within any per-read timeout; the whole takes ~50 s.
    with _SlowDocument(interval=0.7) as slow:
        fetcher = ClientMetadataFetcher(allow_loopback=True, scopes=[], deadline_seconds=2.0)
        started = time.monotonic()
        with pytest.raises(ClientMetadataError, match="within 2 s"):
            anyio.run(fetcher.client, slow.url)
        assert time.monotonic() - started < 20  # far below the document's ~50 s


class _Listener:
    """A TCP listener on 127.0.0.1 that only counts the connections it accepts."""

    def __init__(self) -> None:
        self.accepted = 0
        self._socket = socket.create_server(("127.0.0.1", 0))
        self._socket.settimeout(0.2)
        self.port = self._socket.getsockname()[1]
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                connection, _ = self._socket.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self.accepted += 1
            connection.close()

    def __enter__(self) -> _Listener:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self._socket.close()


@pytest.mark.integration
def test_the_fetch_connects_to_the_address_that_was_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    """DNS rebinding: the fake resolver (not ours: the system's) answers a public address the
    first time and 127.0.0.1 after; the fetch must never reach 127.0.0.1."""
    from claude_code_memory.auth.oauth.client_metadata import ClientMetadataError, ClientMetadataFetcher

    real = socket.getaddrinfo
    answers: list[str] = []

    def rebinding(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        if host != "docs.rebind.example":
            return real(host, port, *args, **kwargs)
        address = "93.184.215.14" if not answers else "127.0.0.1"
        answers.append(address)
        return [(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP, "", (address, int(port)))]

    monkeypatch.setattr(socket, "getaddrinfo", rebinding)
    with _Listener() as listener:
        url = f"https://docs.rebind.example:{listener.port}/client.json"
        fetcher = ClientMetadataFetcher(allow_loopback=False, scopes=[], deadline_seconds=2.0)
        with pytest.raises(ClientMetadataError):
            anyio.run(fetcher.client, url)
        time.sleep(0.3)
        assert answers[0] == "93.184.215.14"
        assert listener.accepted == 0, f"the fetch reached 127.0.0.1 (resolver answers: {answers})"


# -- pure parts ----------------------------------------------------------------------------------
def test_redirect_uri_rules() -> None:
    from claude_code_memory.auth.oauth.redirect_uris import allowed

    for uri in (
        "https://app.example/cb",
        "http://127.0.0.1:1234/cb",
        "http://localhost/cb",
        "com.example.app:/cb",
        "cursor://anysphere.cursor-mcp/oauth/callback",
    ):
        assert allowed(uri), uri
    for uri in (
        "vbscript:x",
        "file:///x",
        "blob:https://a/x",
        " javascript:x",
        "java\tscript:x",
        "http://10.0.0.1/cb",
        "https:///nohost",
        "https://a.example/cb#x",
        "about:blank",
    ):
        assert not allowed(uri), uri
