"""The ``server`` section, with its exposure settings (``server.tls``, ``server.rate_limit``,
``server.trusted_proxies``, docs/remote.md), and ``auth.oauth.registration`` (docs/oauth.md):
part of :mod:`claude_code_memory.config`'s ``Settings`` (which loads and validates it), kept in
a module of its own so that the settings stay readable."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class TlsSettings(_Section):
    """HTTPS for the API (docs/remote.md): a certificate and key, or a self-signed one made once
    under the state directory's ``tls/``."""

    cert_file: str | None = None
    key_file: str | None = None
    self_signed: bool = False

    @model_validator(mode="after")
    def _one_source(self) -> TlsSettings:
        if bool(self.cert_file) != bool(self.key_file) or (self.self_signed and self.cert_file):
            raise ValueError("set cert_file with key_file, or self_signed: true, not both")
        return self


_RATE = r"^[0-9]+ ?(/|per) ?[0-9]* ?(second|minute|hour|day)s?$"


class RateLimitSettings(_Section):
    """Requests per client (429 with Retry-After beyond) and failed sign-ins per address, in
    the ``limits`` notation; ``loopback: false`` never counts this machine's requests."""

    per_token: str = Field("1200/minute", pattern=_RATE)
    per_address: str = Field("1200/minute", pattern=_RATE)
    loopback: bool = False
    login_failures: str = Field("5/15 minutes", pattern=_RATE)


class RegistrationSettings(_Section):
    """Dynamic client registration (``POST /register``, open to anyone): how many registered
    clients nobody has authorized yet may wait, in all and per address they came from, and how
    long one waits before it is deleted."""

    max_unused_clients: int = Field(1000, ge=1, le=1_000_000)
    max_unused_clients_per_address: int = Field(20, ge=1, le=100_000)
    #: A client nobody let in (no consent) within this many hours is deleted.
    unused_client_hours: int = Field(24, ge=1, le=24 * 365)


class ServerSettings(_Section):
    host: str = "127.0.0.1"
    port: int = Field(8765, ge=1, le=65535)
    data_dir: str = "data"
    #: The stack's run files and logs (``ccmem stack``); None: under data_dir.
    state_dir: str | None = None
    admin_token: str | None = None
    max_body_bytes: int = Field(2_000_000, ge=1024)
    cors_origins: list[str] = Field(default_factory=list)
    tls: TlsSettings = Field(default_factory=TlsSettings)
    insecure_bind: bool = False
    rate_limit: RateLimitSettings = Field(default_factory=RateLimitSettings)
    #: Reverse proxies (addresses or networks) whose ``X-Forwarded-For`` and
    #: ``X-Forwarded-Proto`` the API and the UI believe; empty: they believe no one's, and a
    #: request counts for the address it came from (docs/remote.md).
    trusted_proxies: list[str] = Field(default_factory=list)
    log_level: Literal["debug", "info", "warning", "error"] = "info"
    #: API processes sharing one PostgreSQL and one Qdrant server (docs/team.md); jobs' leases.
    replicas: int = Field(1, ge=1, le=64)
    lease_seconds: float = Field(60, ge=1)

    @field_validator("trusted_proxies")
    @classmethod
    def _networks(cls, value: list[str]) -> list[str]:
        import ipaddress

        for entry in value:
            try:
                ipaddress.ip_network(entry.strip(), strict=False)
            except ValueError:
                raise ValueError(
                    f"{entry!r} is not an IP address or network (10.0.0.5, 172.18.0.0/16)"
                ) from None
        return value
