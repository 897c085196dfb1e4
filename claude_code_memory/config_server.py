"""The server's exposure settings (``server.tls``, ``server.rate_limit``): part of
:mod:`.config`'s ``Settings``, kept in their own module so that config.py stays readable.
See docs/remote.md."""

from __future__ import annotations

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
