"""What a client may say about itself (pure): the size of every RFC 7591 field a registration
(``POST /register``, no credentials) or a Client ID Metadata Document may carry, and its
redirect URIs (:mod:`.redirect_uris`). A refusal is RFC 7591 §3.2.2's: ``invalid_redirect_uri``
or ``invalid_client_metadata``, with a description naming the field; nothing is stored.

The limits are far above what a real client sends (Claude Code registers ~300 bytes) and
small enough that a registration costs the database a few KiB at most.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from . import redirect_uris

#: The whole registration request.
MAX_BODY_BYTES = 16 * 1024
MAX_REDIRECT_URIS = 10
#: Longest text field (``client_name``, ``software_id``, ``scope``...).
MAX_TEXT = 200
#: Longest URL field (``client_uri``, ``logo_uri``...).
MAX_URL = redirect_uris.MAX_LENGTH
MAX_LIST_ITEMS = 10
#: ``jwks`` inline, as JSON.
MAX_JWKS_BYTES = 4096

TEXT_FIELDS = (
    "client_name",
    "scope",
    "software_id",
    "software_version",
    "token_endpoint_auth_method",
    "application_type",
)
URL_FIELDS = ("client_uri", "logo_uri", "tos_uri", "policy_uri", "jwks_uri")
LIST_FIELDS = ("grant_types", "response_types", "contacts")

ErrorCode = Literal["invalid_client_metadata", "invalid_redirect_uri"]


class MetadataRefused(ValueError):
    """Client metadata no client may register; ``error`` is RFC 7591's code."""

    def __init__(self, error: ErrorCode, description: str) -> None:
        super().__init__(description)
        self.error: ErrorCode = error
        self.description = description


def check(document: Any) -> None:
    """Raise :class:`MetadataRefused` unless ``document`` (parsed JSON) keeps every limit."""
    if not isinstance(document, dict):
        raise MetadataRefused("invalid_client_metadata", "the client metadata must be a JSON object")
    uris = document.get("redirect_uris")
    if isinstance(uris, list):
        if len(uris) > MAX_REDIRECT_URIS:
            raise MetadataRefused(
                "invalid_redirect_uri", f"{len(uris)} redirect_uris; at most {MAX_REDIRECT_URIS}"
            )
        for uri in uris:
            if not isinstance(uri, str):
                raise MetadataRefused("invalid_redirect_uri", "every redirect URI must be a string")
            try:
                redirect_uris.check(uri)
            except redirect_uris.RedirectUriRefused as error:
                raise MetadataRefused("invalid_redirect_uri", str(error)) from None
    for field in TEXT_FIELDS:
        _text(field, document.get(field), MAX_TEXT)
    for field in URL_FIELDS:
        _text(field, document.get(field), MAX_URL)
    for field in LIST_FIELDS:
        value = document.get(field)
        if isinstance(value, list):
            if len(value) > MAX_LIST_ITEMS:
                raise MetadataRefused(
                    "invalid_client_metadata", f"{field} has {len(value)} items; at most {MAX_LIST_ITEMS}"
                )
            for item in value:
                _text(field, item, MAX_TEXT)
    jwks = document.get("jwks")
    if jwks is not None and len(json.dumps(jwks)) > MAX_JWKS_BYTES:
        raise MetadataRefused("invalid_client_metadata", f"jwks is over {MAX_JWKS_BYTES} bytes")


def _text(field: str, value: Any, limit: int) -> None:
    if isinstance(value, str) and len(value) > limit:
        raise MetadataRefused(
            "invalid_client_metadata", f"{field} is {len(value)} characters long; at most {limit}"
        )
