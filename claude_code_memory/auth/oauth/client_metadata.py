"""Client ID Metadata Documents: a client whose ``client_id`` is an https URL serves a JSON
document there that names it and its redirect URIs (draft-ietf-oauth-client-id-metadata-document,
what MCP's authorization spec recommends). Such a client is public: it proves nothing but
control of its redirect URIs, and PKCE protects its codes.

The document is fetched without following redirects, capped in size and in time (one deadline
for the whole fetch, however slowly the bytes come), and not from this machine's or a private
network's addresses unless ``auth.oauth.allow_loopback_client_ids`` (tests and development) lets
loopback http URLs in. The name is resolved once: every address it has is checked, and the
fetch connects to the checked address (the name still goes in ``Host`` and TLS's SNI, and the
certificate must match it), so a resolver that answers differently the second time (DNS
rebinding) cannot point the fetch elsewhere. Its redirect URIs and fields pass the same checks
as a registration's (:mod:`.registration`).
"""

from __future__ import annotations

import ipaddress
import json
import socket
import time
from typing import Any
from urllib.parse import urlsplit

import anyio
import anyio.to_thread
import httpx
from mcp.shared.auth import InvalidRedirectUriError, OAuthClientInformationFull
from pydantic import AnyUrl, ValidationError

from . import redirect_uris, registration
from .redirect_uris import LOOPBACK_HOSTS

MAX_DOCUMENT_BYTES = 64 * 1024
#: The whole fetch, name resolution to the last byte: a slow document fails within it.
FETCH_DEADLINE_SECONDS = 5.0
#: How long a fetched document is trusted before it is fetched again.
CACHE_SECONDS = 300


class Client(OAuthClientInformationFull):
    """A client whose loopback redirect URIs match with any port (RFC 8252 §7.3: a native
    app listens on whatever port is free, as Claude Code does)."""

    def validate_redirect_uri(self, redirect_uri: AnyUrl | None) -> AnyUrl:
        # A record stored before the checks of redirect_uris.py may name any scheme.
        if redirect_uri is not None and not redirect_uris.allowed(str(redirect_uri)):
            raise InvalidRedirectUriError(f"Redirect URI '{redirect_uri}' is not one a client may use")
        if redirect_uri is not None and any(
            _same_loopback(str(registered), str(redirect_uri)) for registered in self.redirect_uris or []
        ):
            return redirect_uri
        return super().validate_redirect_uri(redirect_uri)


def _same_loopback(registered: str, requested: str) -> bool:
    ours, theirs = urlsplit(registered), urlsplit(requested)
    return (
        ours.scheme == theirs.scheme == "http"
        and ours.hostname in LOOPBACK_HOSTS
        and ours.hostname == theirs.hostname
        and (ours.path, ours.query) == (theirs.path, theirs.query)
    )


class ClientMetadataError(ValueError):
    """A client id URL or its document that cannot name a client; the message says why."""


def is_metadata_url(client_id: str) -> bool:
    """Whether ``client_id`` is a URL (a metadata document) rather than a registered id."""
    return client_id.startswith(("https://", "http://"))


def check_url(client_id: str, *, allow_loopback: bool) -> str:
    """The address to fetch ``client_id``'s document from: the URL's host resolved once, every
    address it has checked; ClientMetadataError when the URL or an address may not be used."""
    parts = urlsplit(client_id)
    host = parts.hostname or ""
    loopback_http = parts.scheme == "http" and host in LOOPBACK_HOSTS
    if parts.scheme != "https" and not (allow_loopback and loopback_http):
        raise ClientMetadataError(f"client_id {client_id!r}: a metadata document URL must be https")
    if parts.path in ("", "/") or parts.fragment or parts.username or parts.password:
        raise ClientMetadataError(f"client_id {client_id!r}: needs a path, and no fragment or credentials")
    addresses = _addresses(host, parts.port or (443 if parts.scheme == "https" else 80))
    if not allow_loopback and any(_private(address) for address in addresses):
        raise ClientMetadataError(f"client_id {client_id!r}: names this machine or a private network")
    return addresses[0]


def _addresses(host: str, port: int) -> list[str]:
    try:
        found = socket.getaddrinfo(host, port, proto=socket.IPPROTO_TCP)
    except OSError:
        raise ClientMetadataError(f"cannot resolve the client id's host {host!r}") from None
    addresses = list(dict.fromkeys(str(info[4][0]).split("%")[0] for info in found))
    if not addresses:
        raise ClientMetadataError(f"cannot resolve the client id's host {host!r}")
    return addresses


def _private(address: str) -> bool:
    ip = ipaddress.ip_address(address)
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_private or ip.is_loopback or ip.is_link_local or ip.is_reserved or ip.is_unspecified


def parse_document(client_id: str, document: Any, scopes: list[str]) -> Client:
    """The client a fetched document describes (pure)."""
    if not isinstance(document, dict):
        raise ClientMetadataError(f"{client_id}: the document is not a JSON object")
    if document.get("client_id") != client_id:
        raise ClientMetadataError(f"{client_id}: the document's client_id is {document.get('client_id')!r}")
    uris = document.get("redirect_uris")
    if not isinstance(uris, list) or not uris:
        raise ClientMetadataError(f"{client_id}: the document names no redirect_uris")
    try:
        registration.check(document)
    except registration.MetadataRefused as refused:
        raise ClientMetadataError(f"{client_id}: {refused.error}: {refused.description}") from None
    method = document.get("token_endpoint_auth_method", "none")
    if method != "none":
        raise ClientMetadataError(
            f"{client_id}: token_endpoint_auth_method {method!r} is not supported; "
            "a metadata-document client is public ('none')"
        )
    try:
        return Client(
            client_id=client_id,
            redirect_uris=uris,
            client_name=document.get("client_name"),
            client_uri=document.get("client_uri"),
            logo_uri=document.get("logo_uri"),
            token_endpoint_auth_method="none",
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            scope=" ".join(scopes),
        )
    except ValidationError as error:
        raise ClientMetadataError(
            f"{client_id}: invalid client metadata: {error.errors()[0]['msg']}"
        ) from None


class ClientMetadataFetcher:
    """Fetches and caches documents (per process; a document is small and changes rarely)."""

    def __init__(
        self, *, allow_loopback: bool, scopes: list[str], deadline_seconds: float = FETCH_DEADLINE_SECONDS
    ) -> None:
        self.allow_loopback = allow_loopback
        self.scopes = scopes
        self.deadline_seconds = deadline_seconds
        self._cache: dict[str, tuple[float, OAuthClientInformationFull]] = {}

    async def client(self, client_id: str) -> OAuthClientInformationFull:
        cached = self._cache.get(client_id)
        if cached and cached[0] > time.monotonic():
            return cached[1]
        try:
            with anyio.fail_after(self.deadline_seconds):
                address = await anyio.to_thread.run_sync(
                    lambda: check_url(client_id, allow_loopback=self.allow_loopback), abandon_on_cancel=True
                )
                body = await _fetch(client_id, address)
        except TimeoutError:
            raise ClientMetadataError(
                f"{client_id}: the document did not arrive within {self.deadline_seconds:g} s"
            ) from None
        try:
            document = json.loads(bytes(body))
        except ValueError:
            raise ClientMetadataError(f"{client_id}: the document is not JSON") from None
        client = parse_document(client_id, document, self.scopes)
        self._cache[client_id] = (time.monotonic() + CACHE_SECONDS, client)
        return client


def _pinned(client_id: str, address: str) -> tuple[str, dict[str, str], dict[str, str]]:
    """The URL that reaches ``address`` itself, with the headers and TLS name of the original."""
    parts = urlsplit(client_id)
    literal = f"[{address}]" if ":" in address else address
    netloc = f"{literal}:{parts.port}" if parts.port else literal
    host = parts.netloc.rpartition("@")[2]
    extensions = {"sni_hostname": parts.hostname or ""} if parts.scheme == "https" else {}
    return parts._replace(netloc=netloc).geturl(), {"Host": host, "Accept": "application/json"}, extensions


async def _fetch(client_id: str, address: str) -> bytes:
    url, headers, extensions = _pinned(client_id, address)
    body = bytearray()
    try:
        async with (
            httpx.AsyncClient(
                timeout=FETCH_DEADLINE_SECONDS, follow_redirects=False, trust_env=False
            ) as http,
            http.stream("GET", url, headers=headers, extensions=extensions) as response,
        ):
            if response.status_code != 200:
                raise ClientMetadataError(f"{client_id}: the document answered HTTP {response.status_code}")
            async for chunk in response.aiter_bytes():
                body.extend(chunk)
                if len(body) > MAX_DOCUMENT_BYTES:
                    raise ClientMetadataError(f"{client_id}: the document is over {MAX_DOCUMENT_BYTES} bytes")
    except httpx.HTTPError as error:
        raise ClientMetadataError(f"{client_id}: cannot fetch the document: {error}") from None
    return bytes(body)
