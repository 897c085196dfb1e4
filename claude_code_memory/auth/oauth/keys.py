"""The built-in authorization server's signing key: an EC P-256 key the server generates once
and keeps in the data directory, readable by its owner only (0600)."""

from __future__ import annotations

import base64
import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from jwt.algorithms import ECAlgorithm

from ...errors import ConfigError

KEY_FILE = "oauth-signing-key.pem"
ALGORITHM = "ES256"


@dataclass(frozen=True)
class SigningKey:
    private: ec.EllipticCurvePrivateKey
    key_id: str

    @property
    def public(self) -> ec.EllipticCurvePublicKey:
        return self.private.public_key()

    def jwk(self) -> dict[str, Any]:
        """The public key as a JWK (for a JWKS document)."""
        jwk: dict[str, Any] = json.loads(ECAlgorithm.to_jwk(self.public))
        return {**jwk, "kid": self.key_id, "use": "sig", "alg": ALGORITHM}


def load_or_create(data_dir: Path) -> SigningKey:
    """The key in ``data_dir``; generated there (0600, created exclusively) the first time."""
    path = data_dir / KEY_FILE
    if not path.exists():
        data_dir.mkdir(parents=True, exist_ok=True)
        pem = ec.generate_private_key(ec.SECP256R1()).private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
        try:
            # O_EXCL: two processes starting at once keep one key, the first one written.
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            pass
        else:
            with os.fdopen(fd, "wb") as file:
                file.write(pem)
    if path.stat().st_mode & 0o077:
        raise ConfigError(f"{path}: the OAuth signing key must be readable by its owner only (chmod 600)")
    private = serialization.load_pem_private_key(path.read_bytes(), password=None)
    if not isinstance(private, ec.EllipticCurvePrivateKey):
        raise ConfigError(f"{path}: not an EC private key")
    thumbprint = ECAlgorithm.to_jwk(private.public_key(), as_dict=True)
    return SigningKey(private, key_id=_thumbprint(thumbprint))


def _thumbprint(jwk: dict[str, Any]) -> str:
    """RFC 7638 JWK thumbprint: the key's id, stable across restarts."""
    canonical = json.dumps(
        {k: jwk[k] for k in ("crv", "kty", "x", "y")}, separators=(",", ":"), sort_keys=True
    )
    return base64.urlsafe_b64encode(hashlib.sha256(canonical.encode()).digest()).rstrip(b"=").decode()
