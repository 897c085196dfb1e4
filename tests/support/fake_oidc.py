"""Small HTTP servers on loopback for the OAuth tests: JSON documents at paths (a client's
metadata document), and an OpenID Connect issuer that speaks real discovery and JWKS and signs
tokens with its own RSA key (PyJWT), as an external identity provider would."""

from __future__ import annotations

import json
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import jwt
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm


class JsonServer:
    """Serves ``documents[path]`` as JSON on 127.0.0.1 from a thread; a context manager."""

    def __init__(self) -> None:
        self.documents: dict[str, Any] = {}
        documents = self.documents

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
                document = documents.get(self.path)
                body = json.dumps(document).encode()
                self.send_response(200 if document is not None else 404)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> JsonServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


class FakeIssuer(JsonServer):
    """An OpenID Connect issuer: discovery document, JWKS, and :meth:`token` to sign with."""

    def __init__(self) -> None:
        super().__init__()
        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.key_id = uuid.uuid4().hex

    def __enter__(self) -> FakeIssuer:
        super().__enter__()
        jwk = json.loads(RSAAlgorithm.to_jwk(self.key.public_key()))
        self.documents["/.well-known/openid-configuration"] = {
            "issuer": self.base_url,
            "authorization_endpoint": f"{self.base_url}/authorize",
            "token_endpoint": f"{self.base_url}/token",
            "jwks_uri": f"{self.base_url}/jwks",
            "response_types_supported": ["code"],
            "subject_types_supported": ["public"],
            "id_token_signing_alg_values_supported": ["RS256"],
        }
        self.documents["/jwks"] = {"keys": [{**jwk, "kid": self.key_id, "use": "sig", "alg": "RS256"}]}
        return self

    def token(self, *, audience: str, subject: str, scope: str, lifetime: int = 300, **extra: Any) -> str:
        now = int(time.time())
        claims = {"iss": self.base_url, "aud": audience, "sub": subject, "scope": scope}
        claims |= {"iat": now, "exp": now + lifetime, "client_id": "fake-client", **extra}
        return jwt.encode(claims, self.key, algorithm="RS256", headers={"kid": self.key_id})
