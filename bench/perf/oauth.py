"""OAuth's costs (docs/oauth.md): the flow's round trips and time, and what checking an access
token adds to a request compared with a bearer token from ``ccmem token create``. Prints JSON.

    .venv/bin/python -m bench.perf.oauth [--flows 5] [--requests 1000] [--out FILE]

``flow``: the MCP SDK's OAuth client (``mcp.client.auth``) from nothing to the first answered
``tools/list`` over Streamable HTTP, against a real ``ccmem serve`` with ``auth.oauth`` on, with
dynamic registration and with a Client ID Metadata Document; the browser's part (authorize →
consent page → form post) is done over HTTP. Requests are counted per party: the client's
(through its HTTP client) and the browser's.

``validation``: ``GET /api/v1/me`` timed from the client over loopback, alternating a bearer
token and an OAuth access token of the same user on the same server, and the same bearer token
on a server with OAuth off (today's path); then the check alone, in process:
``ResourceServer.authenticate`` for each kind of token over the server's database.
Not a test: numbers depend on the machine.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from claude_code_memory.auth import oauth
from claude_code_memory.auth.identity import Identity
from claude_code_memory.config import load_settings
from claude_code_memory.db.database import Database
from tests.support.fake_oidc import JsonServer
from tests.support.oauth_flow import REDIRECT_URI, SdkClient, raw_flow
from tests.support.server import MemoryServer

OAUTH_ENV = {"CCMEM_AUTH__OAUTH__ENABLED": "true", "CCMEM_AUTH__OAUTH__ALLOW_LOOPBACK_CLIENT_IDS": "true"}


def percentiles(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "p50_ms": round(ordered[len(ordered) // 2] * 1000, 3),
        "p95_ms": round(ordered[int(len(ordered) * 0.95)] * 1000, 3),
        "mean_ms": round(statistics.fmean(ordered) * 1000, 3),
        "n": len(ordered),
    }


async def one_flow(server: MemoryServer, documents: JsonServer | None) -> dict[str, Any]:
    user = f"bench-{uuid.uuid4().hex[:8]}"
    token = server.make_token(user)
    url = f"{server.base_url}/mcp/claude-code/http/{user}"
    client_id = None
    if documents is not None:
        client_id = f"{documents.base_url}/clients/{user}.json"
        documents.documents[f"/clients/{user}.json"] = {
            "client_id": client_id,
            "client_name": "bench",
            "redirect_uris": [REDIRECT_URI],
            "token_endpoint_auth_method": "none",
        }
    sdk = SdkClient(url, token, client_metadata_url=client_id)
    requests: list[str] = []

    async def count(request: httpx2.Request) -> None:
        requests.append(f"{request.method} {request.url.path}")

    started = time.perf_counter()
    async with (
        httpx2.AsyncClient(auth=sdk.provider(), timeout=60, event_hooks={"request": [count]}) as http,
        Client(streamable_http_client(url, http_client=http), mode="legacy") as session,
    ):
        await session.list_tools()
        elapsed = time.perf_counter() - started
    return {"seconds": elapsed, "client_requests": requests}


def flows(server: MemoryServer, runs: int) -> dict[str, Any]:
    result: dict[str, Any] = {}
    with JsonServer() as documents:
        for name, docs in (("dynamic_registration", None), ("client_metadata_document", documents)):
            samples = [anyio.run(one_flow, server, docs) for _ in range(runs)]
            seconds = [s["seconds"] for s in samples]
            result[name] = {
                "wall_ms_median": round(statistics.median(seconds) * 1000, 1),
                "wall_ms_min": round(min(seconds) * 1000, 1),
                "client_requests": len(samples[-1]["client_requests"]),
                "client_request_list": samples[-1]["client_requests"],
                # GET /authorize (302), GET the consent page, POST the form (302 back to the client)
                "browser_requests": 3,
                "runs": runs,
            }
    return result


def http_validation(oauth_server: MemoryServer, plain_server: MemoryServer, requests: int) -> dict[str, Any]:
    user = f"bench-{uuid.uuid4().hex[:8]}"
    bearer = oauth_server.make_token(user)
    access = anyio.run(
        lambda: raw_flow(oauth_server.base_url, bearer, scope="memory:read memory:write")
    ).access_token
    plain_bearer = plain_server.make_token(user)
    samples: dict[str, list[float]] = {"bearer_oauth_off": [], "bearer_oauth_on": [], "access_token": []}
    with httpx.Client(timeout=30, trust_env=False) as http:
        targets = {
            "bearer_oauth_off": (plain_server.base_url, plain_bearer),
            "bearer_oauth_on": (oauth_server.base_url, bearer),
            "access_token": (oauth_server.base_url, access),
        }
        for base, token in targets.values():  # warm-up
            for _ in range(50):
                http.get(f"{base}/api/v1/me", headers={"Authorization": f"Bearer {token}"}).raise_for_status()
        for _ in range(requests):
            for name, (base, token) in targets.items():
                started = time.perf_counter()
                http.get(f"{base}/api/v1/me", headers={"Authorization": f"Bearer {token}"}).raise_for_status()
                samples[name].append(time.perf_counter() - started)
    measured = {name: percentiles(values) for name, values in samples.items()}
    measured["access_token_added_vs_bearer"] = {
        "p50_ms": round(measured["access_token"]["p50_ms"] - measured["bearer_oauth_on"]["p50_ms"], 3),
        "p95_ms": round(measured["access_token"]["p95_ms"] - measured["bearer_oauth_on"]["p95_ms"], 3),
    }
    return {"user": user, "bearer": bearer, "access": access, "measured": measured}


def in_process(data_dir: Path, bearer: str, access: str, port: int, requests: int) -> dict[str, Any]:
    """The check alone over the server's own database (read-only use beside the running server)."""
    settings = load_settings(
        environ={"CCMEM_AUTH__OAUTH__ENABLED": "true", "CCMEM_SERVER__PORT": str(port)},
        config_path=_empty_config(),
        overrides={"server.data_dir": str(data_dir)},
    )
    database = Database(settings.database_url)
    identity = Identity(database, admin_token=None)
    built = oauth.build(settings, database)
    assert built is not None
    samples: dict[str, list[float]] = {"bearer": [], "access_token": []}
    for _ in range(50):
        built.resource.authenticate(f"Bearer {access}", identity)
        identity.authenticate(f"Bearer {bearer}")
    for _ in range(requests):
        started = time.perf_counter()
        identity.authenticate(f"Bearer {bearer}")
        samples["bearer"].append(time.perf_counter() - started)
        started = time.perf_counter()
        built.resource.authenticate(f"Bearer {access}", identity)
        samples["access_token"].append(time.perf_counter() - started)
    database.close()
    return {name: percentiles(values) for name, values in samples.items()}


def _empty_config() -> Path:
    path = Path(tempfile.mkdtemp(prefix="bench-oauth-")) / "config.yaml"
    path.write_text("{}\n")
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--flows", type=int, default=5)
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-oauth-"))
    with (
        MemoryServer(work / "oauth", env=OAUTH_ENV) as oauth_server,
        MemoryServer(work / "plain") as plain_server,
    ):
        result: dict[str, Any] = {"flow": flows(oauth_server, args.flows)}
        validation = http_validation(oauth_server, plain_server, args.requests)
        result["validation_http_get_me"] = validation["measured"]
        result["validation_in_process"] = in_process(
            oauth_server.data_dir,
            validation["bearer"],
            validation["access"],
            oauth_server.port,
            args.requests,
        )
    output = json.dumps(result, indent=2)
    print(output)
    if args.out:
        args.out.write_text(output + "\n")


if __name__ == "__main__":
    main()
