"""The ``server`` section, with its exposure settings (``server.tls``, ``server.rate_limit``,
docs/remote.md): part of :mod:`.config`'s ``Settings`` (which loads and validates it), kept in
a module of its own so that config.py stays readable."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator


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
    log_level: Literal["debug", "info", "warning", "error"] = "info"
    #: API processes sharing one PostgreSQL and one Qdrant server (docs/team.md); jobs' leases.
    replicas: int = Field(1, ge=1, le=64)
    lease_seconds: float = Field(60, ge=1)
