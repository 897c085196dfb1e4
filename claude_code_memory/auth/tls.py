"""The API's certificate: the one ``server.tls`` names, or a self-signed one made once under the
state directory (``tls/cert.pem``, ``tls/key.pem`` readable by its owner only), and the SHA-256
fingerprint a second machine checks it by (docs/remote.md)."""

from __future__ import annotations

import datetime
import ipaddress
import os
import socket
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from ..errors import ConfigError

#: How long a made certificate lasts; a new one is made when it has expired.
SELF_SIGNED_DAYS = 825


@dataclass(frozen=True)
class ServerCertificate:
    cert_file: Path
    key_file: Path
    fingerprint: str


def fingerprint(cert_pem: bytes) -> str:
    """The certificate's SHA-256 fingerprint as ``AB:CD:...`` (what browsers and openssl show)."""
    certificate = x509.load_pem_x509_certificate(cert_pem)
    return certificate.fingerprint(hashes.SHA256()).hex(":").upper()


def same_fingerprint(expected: str, actual: str) -> bool:
    """Whether two fingerprints are the same, however they are spelled (case, colons)."""

    def plain(value: str) -> str:
        return value.replace(":", "").replace(" ", "").lower()

    return plain(expected) == plain(actual)


def _names(host: str) -> list[x509.GeneralName]:
    names: list[str] = ["localhost", "127.0.0.1", "::1", socket.gethostname()]
    if host not in ("0.0.0.0", "::", ""):
        names.append(host)
    general: list[x509.GeneralName] = []
    for name in dict.fromkeys(names):
        try:
            general.append(x509.IPAddress(ipaddress.ip_address(name)))
        except ValueError:
            general.append(x509.DNSName(name))
    return general


def make_self_signed(directory: Path, host: str) -> ServerCertificate:
    """The self-signed certificate under ``directory``, made (for this machine's names and
    ``host``) when it is missing or expired."""
    cert_file, key_file = directory / "cert.pem", directory / "key.pem"
    if cert_file.exists() and key_file.exists():
        # A key others could read may have been copied: refused, as the OAuth signing key is,
        # rather than quietly narrowed (auth/oauth/keys.py).
        if key_file.stat().st_mode & 0o077:
            raise ConfigError(
                f"{key_file}: the TLS key must be readable by its owner only (chmod 600 {key_file}, "
                f"or delete {cert_file} and {key_file} to make a new certificate)"
            )
        pem = cert_file.read_bytes()
        expires = x509.load_pem_x509_certificate(pem).not_valid_after_utc
        if expires > datetime.datetime.now(datetime.UTC) + datetime.timedelta(days=1):
            return ServerCertificate(cert_file, key_file, fingerprint(pem))
    directory.mkdir(parents=True, exist_ok=True)
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name(
        [x509.NameAttribute(NameOID.COMMON_NAME, f"claude-code-memory {socket.gethostname()}")]
    )
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=SELF_SIGNED_DAYS))
        .add_extension(x509.SubjectAlternativeName(_names(host)), critical=False)
        # Its own trust anchor: a client that trusts this file (a CA file, NODE_EXTRA_CA_CERTS)
        # verifies the server with it, names included.
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                key_cert_sign=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                crl_sign=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(key, hashes.SHA256())
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    # The key is created readable by its owner only: never a moment with wider permissions.
    descriptor = os.open(key_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "wb") as handle:
        handle.write(key_pem)
    os.chmod(key_file, 0o600)
    cert_pem = certificate.public_bytes(serialization.Encoding.PEM)
    cert_file.write_bytes(cert_pem)
    return ServerCertificate(cert_file, key_file, fingerprint(cert_pem))


def server_certificate(
    cert_file: str | None, key_file: str | None, self_signed: bool, state_dir: Path, host: str
) -> ServerCertificate | None:
    """The certificate ``server.tls`` asks for; None when TLS is off; ConfigError for a file
    that is missing or not a certificate."""
    if self_signed:
        return make_self_signed(state_dir / "tls", host)
    if not cert_file or not key_file:
        return None
    cert, key = Path(cert_file).expanduser(), Path(key_file).expanduser()
    for name, path in (("server.tls.cert_file", cert), ("server.tls.key_file", key)):
        if not path.is_file():
            raise ConfigError(f"{name} = {str(path)!r}: no such file")
    try:
        return ServerCertificate(cert, key, fingerprint(cert.read_bytes()))
    except ValueError as error:
        raise ConfigError(f"server.tls.cert_file = {str(cert)!r}: not a PEM certificate ({error})") from None


def pinned_certificate(host: str, port: int, expected_fingerprint: str) -> bytes:
    """The certificate the server at ``host:port`` presents, as PEM, when its SHA-256
    fingerprint is ``expected_fingerprint`` (the one ``ccmem serve`` printed); ConfigError
    otherwise. Nothing is sent before the check: the handshake only reads the certificate."""
    import ssl

    try:
        pem = ssl.get_server_certificate((host, port), timeout=15).encode("ascii")
    except OSError as error:
        raise ConfigError(f"cannot read the certificate of {host}:{port} ({error})") from None
    actual = fingerprint(pem)
    if not same_fingerprint(expected_fingerprint, actual):
        raise ConfigError(
            f"the server at {host}:{port} presents a certificate with SHA-256 fingerprint {actual}, "
            f"not {expected_fingerprint}: not connecting (a different server, or someone in between)"
        )
    return pem
