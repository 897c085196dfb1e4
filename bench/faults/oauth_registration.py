"""Fault check: what an anonymous caller can make the OAuth authorization server store or
wait for. Prints JSON.

    .venv/bin/python -m bench.faults.oauth_registration [--flood 200]

Starts the real server (``ccmem serve``, OAuth on, metadata documents on loopback allowed) on a
free loopback port and sends ``POST /register`` what the audit sent: a 1.9 MB ``client_name``,
5,000 redirect URIs, each field over its limit, unknown fields, redirect URIs with schemes a
browser acts on (``javascript:``, ``data:``, ``vbscript:``, ``file:``, ``blob:``, plain http
elsewhere); then ``--flood`` registrations from one address; then Client ID Metadata Documents
naming such redirect URIs, and one that trickles in a byte a second.

Must be 0: ``oversize_accepted`` (an over-limit registration answered 201),
``bad_redirects_accepted``, ``over_cap_accepted`` (registrations past the per-address cap of
unused clients), ``documents_with_bad_redirects_accepted`` (an ``/authorize`` that redirects to
one), ``slow_documents_over_deadline`` (a trickled document that held ``/authorize`` past 7 s
or was accepted).
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx

from bench.harness.scratch_server import scratch_server

ROOT = Path(__file__).resolve().parents[2]  # the repository


LOOPBACK = "http://127.0.0.1:9/cb"
BAD_REDIRECTS = [
    "javascript:alert(document.domain)//",
    "data:text/html,<script>alert(1)</script>",
    "vbscript:msgbox(1)",
    "file:///etc/passwd",
    "blob:https://app.example/1",
    "http://evil.example/cb",
    "about:blank",
    "https://app.example/cb#frag",
]
PER_ADDRESS_CAP = 20  # auth.oauth.registration.max_unused_clients_per_address's default


def oversized() -> dict[str, dict[str, Any]]:
    good: dict[str, Any] = {"redirect_uris": [LOOPBACK]}
    return {
        "client_name 1.9 MB": {**good, "client_name": "x" * 1_900_000},
        "5,000 redirect URIs": {"redirect_uris": [f"http://127.0.0.1:9/cb{n}" for n in range(5000)]},
        "11 redirect URIs": {"redirect_uris": [f"http://127.0.0.1:9/cb{n}" for n in range(11)]},
        "a 3,000-character redirect URI": {"redirect_uris": ["https://a.example/" + "x" * 3000]},
        "client_name 201": {**good, "client_name": "x" * 201},
        "software_id 1,000": {**good, "software_id": "x" * 1000},
        "software_version 1,000": {**good, "software_version": "x" * 1000},
        "scope 1,000": {**good, "scope": "memory:read " * 90},
        "client_uri 3,000": {**good, "client_uri": "https://a.example/" + "x" * 3000},
        "logo_uri 3,000": {**good, "logo_uri": "https://a.example/" + "x" * 3000},
        "tos_uri 3,000": {**good, "tos_uri": "https://a.example/" + "x" * 3000},
        "policy_uri 3,000": {**good, "policy_uri": "https://a.example/" + "x" * 3000},
        "jwks_uri 3,000": {**good, "jwks_uri": "https://a.example/" + "x" * 3000},
        "contacts 50": {**good, "contacts": [f"c{n}@example.com" for n in range(50)]},
        "jwks 10 KB": {**good, "jwks": {"keys": [{"k": "x" * 10_000}]}},
        "unknown field 1 MB": {**good, "padding": "x" * 1_000_000},
    }


class Documents:
    """Client metadata documents on loopback; ``/slow.json`` sends a byte a second."""

    def __init__(self) -> None:
        self.documents: dict[str, Any] = {}
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
                slow = self.path == "/slow.json"
                document = {"client_id": outer.url("/slow.json"), "redirect_uris": [LOOPBACK]}
                body = json.dumps(document if slow else outer.documents.get(self.path)).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                try:
                    for start in range(0, len(body), 1 if slow else len(body)):
                        self.wfile.write(body[start : start + (1 if slow else len(body))])
                        self.wfile.flush()
                        if slow:
                            time.sleep(1.0)
                except OSError:
                    pass

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}{path}"


def authorize(base: str, client_id: str, redirect_uri: str, timeout: float = 120) -> httpx.Response:
    params = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": redirect_uri,
        "code_challenge": "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM",
        "state": "s",
    }
    return httpx.get(f"{base}/authorize", params=params, timeout=timeout)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--flood", type=int, default=200)
    args = parser.parse_args()
    settings = {"CCMEM_AUTH__OAUTH__ENABLED": "true", "CCMEM_AUTH__OAUTH__ALLOW_LOOPBACK_CLIENT_IDS": "true"}
    report: dict[str, Any] = {}
    with scratch_server("ccmem-fault-oauth-", "fault-oauth", settings) as (base, _token):
        register = f"{base}/register"
        refusals: dict[str, int] = {}
        for name, metadata in oversized().items():
            refusals[name] = httpx.post(register, json=metadata, timeout=60).status_code
        report["oversize_answers"] = refusals
        report["oversize_accepted"] = sum(status == 201 for status in refusals.values())
        bad = {
            uri: httpx.post(register, json={"redirect_uris": [uri]}, timeout=30).status_code
            for uri in BAD_REDIRECTS
        }
        report["bad_redirect_answers"] = bad
        report["bad_redirects_accepted"] = sum(status == 201 for status in bad.values())

        flood = [
            httpx.post(
                register, json={"client_name": f"c{n}", "redirect_uris": [LOOPBACK]}, timeout=30
            ).status_code
            for n in range(args.flood)
        ]
        report["flood"] = {"sent": args.flood, "201": flood.count(201), "429": flood.count(429)}
        report["over_cap_accepted"] = max(0, flood.count(201) - PER_ADDRESS_CAP)

        documents = Documents()
        accepted = 0
        for n, uri in enumerate(BAD_REDIRECTS):
            path = f"/c{n}.json"
            documents.documents[path] = {"client_id": documents.url(path), "redirect_uris": [uri]}
            answer = authorize(base, documents.url(path), uri)
            location = answer.headers.get("location", "")
            if answer.status_code in (302, 303) and not location.startswith(base):
                accepted += 1
        report["documents_with_bad_redirects_accepted"] = accepted
        started = time.monotonic()
        slow = authorize(base, documents.url("/slow.json"), LOOPBACK)
        held = time.monotonic() - started
        report["slow_document"] = {"held_seconds": round(held, 1), "status": slow.status_code}
        report["slow_documents_over_deadline"] = int(held > 7 or slow.status_code == 302)
        documents.server.shutdown()
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
