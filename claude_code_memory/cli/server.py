"""The server itself: ``serve`` runs it, ``doctor`` checks the setup (``status``: cli/status.py)."""

from __future__ import annotations

import functools
import logging
import os
import socket
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

import typer
from rich.table import Table

from ..config import Settings
from ..errors import ConfigError, MemoryStackError
from . import common
from .common import ConfigOpt, DataDirOpt, JsonOpt, err, out

if TYPE_CHECKING:
    from ..api.warm_start import WarmStart

HostOpt = Annotated[str | None, typer.Option(help="bind address (default 127.0.0.1)")]
PortOpt = Annotated[int | None, typer.Option(help="port (default 8765)")]

#: Where the capture proxy (`ccmem proxy`) keeps the CA certificate clients must trust.
PROXY_CA = Path("proxy") / "mitmproxy-ca-cert.pem"


def _overrides(host: str | None, port: int | None, data_dir: Path | None) -> dict[str, Any]:
    return {"server.host": host, "server.port": port, **common.data_dir_override(data_dir)}


TlsCertOpt = Annotated[Path | None, typer.Option("--tls-cert", help="serve HTTPS with this PEM certificate")]
TlsKeyOpt = Annotated[Path | None, typer.Option("--tls-key", help="the certificate's PEM private key")]
SelfSignedOpt = Annotated[
    bool,
    typer.Option(
        "--tls-self-signed", help="serve HTTPS with a self-signed certificate made once under the state dir"
    ),
]
InsecureBindOpt = Annotated[
    bool,
    typer.Option(
        "--insecure-bind", help="serve a non-loopback address without TLS (only behind a TLS proxy)"
    ),
]


def exposure_overrides(
    tls_cert: Path | None, tls_key: Path | None, tls_self_signed: bool, insecure_bind: bool
) -> dict[str, Any]:
    """The ``server.tls`` and ``server.insecure_bind`` keys the flags set (None: the config's)."""
    return {
        "server.tls.cert_file": str(tls_cert) if tls_cert else None,
        "server.tls.key_file": str(tls_key) if tls_key else None,
        "server.tls.self_signed": True if tls_self_signed else None,
        "server.insecure_bind": True if insecure_bind else None,
    }


def serve(
    host: HostOpt = None,
    port: PortOpt = None,
    data_dir: DataDirOpt = None,
    config: ConfigOpt = None,
    tls_cert: TlsCertOpt = None,
    tls_key: TlsKeyOpt = None,
    tls_self_signed: SelfSignedOpt = False,
    insecure_bind: InsecureBindOpt = False,
    replicas: Annotated[
        int,
        typer.Option(
            min=1,
            max=64,
            help="run this many API processes on ports PORT, PORT+1, ... sharing one PostgreSQL "
            "(DATABASE_URL) and one Qdrant server (QDRANT_URL); see docs/team.md",
        ),
    ] = 1,
) -> None:
    """Run the memory server (REST API, MCP endpoint, OpenAPI docs at /docs)."""
    common.private_files()
    overrides = _overrides(host, port, data_dir) | exposure_overrides(
        tls_cert, tls_key, tls_self_signed, insecure_bind
    )
    settings = common.settings(config, overrides)
    if replicas > 1:
        from .replicas import run_replicas

        run_replicas(settings, replicas, config)
        return
    tls = settings.server.tls
    certificate = None
    if tls.self_signed or (tls.cert_file and tls.key_file):  # else no TLS: cryptography not loaded
        from ..auth.tls import server_certificate

        certificate = server_certificate(
            tls.cert_file, tls.key_file, tls.self_signed, settings.state_path, settings.server.host
        )
    # One BLAS thread, set before NumPy loads (a value in the environment wins): the exact
    # scan's matrix product is short, and OpenBLAS's idle threads spin on the other core; with
    # them a search costs about half again as much CPU (docs/performance.md, engine/exact_scan.py).
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    from ..memories import embedding_model

    embedding_model.preload(settings)  # in the background, while the imports below run (restart time)
    logging.basicConfig(
        level=settings.server.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    front = _front(settings)
    _warn(settings, certificate is not None)
    import uvicorn

    server = uvicorn.Server(
        uvicorn.Config(
            front,
            host=settings.server.host,
            port=settings.server.port,
            log_level=settings.server.log_level,
            access_log=False,
            # The app reads forwarded headers itself (server.trusted_proxies); uvicorn would
            # believe any from 127.0.0.1.
            proxy_headers=False,
            ssl_certfile=str(certificate.cert_file) if certificate else None,
            ssl_keyfile=str(certificate.key_file) if certificate else None,
        )
    )
    front.on_failure = lambda: setattr(server, "should_exit", True)
    scheme = "https" if certificate else "http"
    err.print(
        f"claude-code-memory listening on {scheme}://{settings.server.host}:{settings.server.port} "
        f"(data: {settings.data_path})"
    )
    if certificate is not None:
        # What `ccmem connect claude-code --fingerprint` checks on another machine.
        err.print(f"TLS certificate {certificate.cert_file}", highlight=False, soft_wrap=True)
        err.print(
            f"TLS certificate SHA-256 fingerprint: {certificate.fingerprint}", highlight=False, soft_wrap=True
        )
    server.run()
    if front.failure is not None:
        raise front.failure  # as if it had been raised before the port was bound
    if not server.started:
        raise typer.Exit(common.EXIT_ERROR)


#: How long the background jobs (the start-up reconciliation first) and the REST routes a first
#: search does not need wait for the first request past /health before they load anyway
#: (api/warm_start.py).
GRACE_SECONDS = 2.0


def _front(settings: Settings) -> WarmStart:
    """The port's application while the server's is built in a thread (api/warm_start.py): the
    port answers /health at once, and a search that arrives early waits for what it needs."""
    from .. import SERVICE_NAME, __version__
    from ..api.warm_start import WarmStart
    from ..auth.exposure import check_bind
    from ..auth.local_mode import require_loopback

    # Refused before the port is bound (the application checks again when it is built).
    server = settings.server
    if settings.auth.local_mode.enabled:
        require_loopback(server.host)
    check_bind(
        server.host,
        tls=server.tls.self_signed or bool(server.tls.cert_file),
        insecure_bind=server.insecure_bind,
    )

    def build() -> Any:
        from ..api.app import create_app
        from ..api.route_table import answered_first

        application = create_app(
            settings, jobs_after=lambda: front.first_answer(GRACE_SECONDS), routes_later=True
        )
        front.later, front.first = application.state.routes_later, answered_first
        return application

    starting = {"service": SERVICE_NAME, "version": __version__, "database": "starting"}
    front = WarmStart(build, {**starting, "vector_store": "starting"}, grace_seconds=GRACE_SECONDS)
    return front


def _warn(settings: Settings, tls: bool) -> None:
    if not settings.server.admin_token:
        err.print("[yellow]warning:[/] no admin token (CCMEM_ADMIN_TOKEN); only user tokens will work")
    local = settings.auth.local_mode
    if local.enabled:
        err.print(
            f"[bold yellow]warning: LOCAL MODE IS ON[/]: requests without a token from this machine act "
            f"as user {local.user!r} (auth.local_mode; see docs/openmemory.md)",
            highlight=False,
        )
    from ..auth.local_mode import is_loopback

    if settings.server.insecure_bind and not tls and not is_loopback(settings.server.host):
        err.print(
            f"[bold red]warning: INSECURE BIND[/]: {settings.server.host} without TLS (--insecure-bind)"
        )


# -- doctor ------------------------------------------------------------------------------------
@dataclass
class Check:
    name: str
    status: Literal["ok", "fail", "warn"]
    detail: str
    hint: str = ""


_MARKS = {"ok": "[green]✓[/]", "fail": "[red]✗[/]", "warn": "[yellow]![/]"}


def _check_config(config: Path | None, overrides: dict[str, Any]) -> tuple[Check, Settings]:
    path = common.config_file(config).resolve()
    try:
        settings = common.settings(config, overrides)
    except ConfigError as exc:
        hint = f"fix the key named above in {path} or .env (every key: docs/configuration.md)"
        fallback = Settings.model_validate({})
        for dotted, value in overrides.items():
            if value is not None:
                section, key = dotted.split(".")
                setattr(getattr(fallback, section), key, value)
        return Check("config", "fail", exc.message, hint), fallback
    where = str(path) if path.exists() else f"{path} not found, built-in defaults"
    return Check("config", "ok", f"valid ({where})"), settings


def _check_port(settings: Settings) -> Check:
    port = settings.server.port
    host = settings.server.host if settings.server.host not in ("0.0.0.0", "::") else "127.0.0.1"
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(1)
        listening = sock.connect_ex((host, port)) == 0
    if not listening:
        return Check("port", "ok", f"{host}:{port} is free")
    body = _health_report(_base(host, port))
    if body is not None and _ours(body):
        return Check(
            "port", "ok", f"our server (version {body['version']}, {body['status']}) runs on {host}:{port}"
        )
    hint = "stop that program, or pick another port: server.port in config.yaml or CCMEM_SERVER__PORT in .env"
    return Check("port", "fail", f"{host}:{port} is taken by another program", hint)


def _check_data_dir(settings: Settings) -> Check:
    path = settings.data_path
    if not path.is_dir():
        return Check(
            "data directory",
            "fail",
            f"{path} does not exist",
            f"mkdir -p {path} (ccmem serve creates it too)",
        )
    try:
        with tempfile.NamedTemporaryFile(dir=path, prefix=".doctor-"):
            pass
    except OSError as exc:
        return Check(
            "data directory", "fail", f"{path} is not writable ({exc.strerror})", f"chown or chmod {path}"
        )
    return Check("data directory", "ok", f"{path} is writable")


def _check_models(settings: Settings) -> list[Check]:
    from ..memories import embedding_model

    if not embedding_model.uses_shipped_model(settings):
        return [
            Check("embedding model", "ok", f"not used (embedder.provider = {settings.embedder.provider})")
        ]
    checks = []
    for found in embedding_model.model_files():
        if found.problem is not None:
            hint = "run ./install.sh to reinstall the model files"
            checks.append(Check(found.name, "fail", found.problem, hint))
        else:
            checks.append(Check(found.name, "ok", f"{found.path} (sha256 matches the pin)"))
    return checks


def _check_secrets(settings: Settings, config: Path | None) -> list[Check]:
    checks = []
    if settings.server.admin_token:
        checks.append(Check("admin token", "ok", "set"))
    else:
        hint = "run ./install.sh (it writes .env with a new token) or set CCMEM_ADMIN_TOKEN in .env"
        checks.append(Check("admin token", "fail", "not set: only user tokens will work", hint))
    env_file = common.config_file(config).resolve().parent / ".env"
    if not env_file.exists():
        checks.append(
            Check(".env", "ok", f"no {env_file}; settings come from config.yaml and the environment")
        )
    else:
        mode = env_file.stat().st_mode & 0o777
        if mode & 0o077:
            detail = f"{env_file} is mode {mode:04o}: other users on this machine can read the admin token"
            checks.append(Check(".env", "fail", detail, f"chmod 600 {env_file}"))
        else:
            checks.append(Check(".env", "ok", f"{env_file} is mode {mode:04o}"))
    return checks


def _check_user_tokens(settings: Settings) -> Check:
    hint = "create one: ccmem token create --user NAME (then: ccmem mcp-config --user NAME)"
    url = settings.database_url
    if url.startswith("sqlite:///") and not Path(url.removeprefix("sqlite:///")).exists():
        return Check("user tokens", "warn", "none yet (no database: the server has not run here)", hint)
    try:
        tokens = [t for t in common.identity(settings).list_tokens() if not t.revoked]
    except MemoryStackError as exc:
        return Check("user tokens", "fail", exc.message, "check storage.database_url")
    if not tokens:
        # A fresh install has none, and nothing is broken: clients just cannot connect yet.
        return Check("user tokens", "warn", "none yet: no client can connect until one exists", hint)
    users = len({t.user_id for t in tokens})
    return Check("user tokens", "ok", f"{len(tokens)} active for {users} user{'s' * (users != 1)}")


def _check_local_mode(settings: Settings) -> Check:
    from ..auth.local_mode import is_loopback

    local = settings.auth.local_mode
    if not local.enabled:
        return Check("local mode", "ok", "off: every request needs a token")
    if not is_loopback(settings.server.host):
        return Check(
            "local mode",
            "fail",
            f"on, but server.host = {settings.server.host!r} is not loopback: the server refuses to start",
            "bind to 127.0.0.1, or set auth.local_mode.enabled: false",
        )
    names = ", ".join([local.user, *local.aliases])
    return Check(
        "local mode",
        "warn",
        f"ON: requests without a token from this machine act as user {local.user!r} (names: {names})",
        "only for clients that cannot send a token; turn it off (auth.local_mode.enabled: false) "
        "when they have moved to tokens",
    )


def _check_exposure(settings: Settings) -> Check:
    """Whether ``serve`` would take this address (auth/exposure.py), and over what."""
    from ..auth.exposure import check_bind

    server = settings.server
    tls = server.tls.self_signed or bool(server.tls.cert_file)
    try:
        warning = check_bind(server.host, tls=tls, insecure_bind=server.insecure_bind)
    except ConfigError as exc:
        return Check("exposure", "fail", exc.message, "see docs/remote.md")
    if warning:
        return Check("exposure", "warn", warning, "only with TLS in front of the server (docs/remote.md)")
    return Check("exposure", "ok", f"{server.host} over {'HTTPS' if tls else 'HTTP'}")


def _check_proxy_ca(settings: Settings) -> Check:
    path = settings.data_path / PROXY_CA
    if path.is_file():
        return Check("proxy CA", "ok", f"{path}")
    hint = "only the capture proxy needs it (forward mode); `ccmem proxy` creates it when it first starts"
    return Check("proxy CA", "warn", f"not set up ({path} does not exist)", hint)


def _base(host: str, port: int) -> str:
    return f"http://{'[' + host + ']' if ':' in host else host}:{port}"


@functools.cache
def _health_report(base: str) -> dict[str, Any] | None:
    """``base``'s ``/health`` body (None unless JSON came back), asked once per command: doctor's
    checks share it, so a program on the port that never answers costs one timeout, not three."""
    import httpx

    try:
        body = httpx.get(f"{base}/health", timeout=3).json()
    except (httpx.HTTPError, ValueError):
        return None
    return body if isinstance(body, dict) else None


def _ours(body: dict[str, Any] | None) -> bool:
    return isinstance(body, dict) and "vector_store" in body and "version" in body


def _server_base(settings: Settings) -> str | None:
    """Our server's URL when one answers on the configured port, else None."""
    host = settings.server.host if settings.server.host not in ("0.0.0.0", "::") else "127.0.0.1"
    base = _base(host, settings.server.port)
    return base if _ours(_health_report(base)) else None


def _check_reconciliation(settings: Settings, run: bool) -> Check:
    """The last reconciliation of SQL and the vector store (memories/lifecycle/reconcile.py); with
    ``run``, a new one: by the running server, or in this process when none runs."""
    import httpx

    base = _server_base(settings)
    report: dict[str, Any] | None
    if base is None and not run:
        return Check("reconciliation", "ok", "server not running: its next start reconciles")
    if base is None:
        from ..memories.server_parts import ServerParts

        try:
            parts = ServerParts(settings)
        except MemoryStackError as exc:
            return Check("reconciliation", "fail", exc.message, "see the other checks")
        try:
            report = parts.reconciler.run("doctor").to_dict()
        finally:
            parts.close()
    elif run:
        token = settings.server.admin_token
        if not token:
            return Check("reconciliation", "fail", "needs the admin token", "set CCMEM_ADMIN_TOKEN in .env")
        response = httpx.post(
            f"{base}/api/v1/admin/reconcile", headers={"Authorization": f"Bearer {token}"}, timeout=None
        )
        if response.status_code != 200:
            return Check("reconciliation", "fail", f"the server answered HTTP {response.status_code}")
        report = response.json()
    else:
        report = (_health_report(base) or {}).get("reconciliation")
    return _reconciliation(report)


def _megabytes(size: int | None) -> str:
    return f"{(size or 0) / (1024 * 1024):.1f} MB"


def _check_storage(settings: Settings) -> Check:
    """Bytes per store under the data directory; with a running server and the admin token,
    the users at the quota warning (memories/lifecycle/storage.py)."""
    import httpx

    from ..memories.lifecycle.storage import store_bytes

    stores = store_bytes(settings)
    sizes = ", ".join(f"{e['store']} {_megabytes(e['bytes'])}" for e in stores if e["bytes"])
    detail = f"{_megabytes(sum(e['bytes'] or 0 for e in stores))} on disk ({sizes or 'empty'})"
    base, token = _server_base(settings), settings.server.admin_token
    if base is None or not token:
        return Check("storage", "ok", detail)
    response = httpx.get(f"{base}/api/v1/storage", headers={"Authorization": f"Bearer {token}"}, timeout=30)
    if response.status_code != 200:
        return Check("storage", "warn", f"{detail}; the server answered HTTP {response.status_code}")
    near = [u for u in response.json()["users"] if u.get("warning")]
    if not near:
        return Check("storage", "ok", detail)
    who = ", ".join(f"{u['user_id']} {u['used_ratio']:.0%}" for u in near)
    hint = "delete memories, or raise performance.max_memory_size_mb (GET /api/v1/storage shows each user)"
    return Check("storage", "warn", f"{detail}; near the quota: {who}", hint)


def _reconciliation(report: dict[str, Any] | None) -> Check:
    hint = "ccmem doctor --reconcile runs it again"
    if not report:
        return Check("reconciliation", "warn", "none yet since the server started", hint)
    if report["state"] == "running":
        return Check("reconciliation", "ok", f"running since {report['started_at']}")
    if report["state"] == "failed":
        return Check("reconciliation", "fail", f"failed: {report.get('error')}", hint)
    detail = (
        f"{report['orphan_vectors_removed']} orphan vectors removed, "
        f"{report['missing_vectors_restored']} missing vectors restored, "
        f"{report['stale_history_removed']} stale histories purged; "
        f"{report['checked_rows']} rows, {report['checked_points']} points checked "
        f"in {report['seconds']} s ({report['trigger']}, {report['finished_at']})"
    )
    return Check("reconciliation", "ok", detail)


def doctor(
    host: Annotated[str | None, typer.Option(help="the server's bind address (default: server.host)")] = None,
    port: Annotated[int | None, typer.Option(help="the port to check (default: server.port, 8765)")] = None,
    data_dir: DataDirOpt = None,
    as_json: JsonOpt = False,
    config: ConfigOpt = None,
    reconcile: Annotated[
        bool,
        typer.Option(
            "--reconcile",
            help="reconcile SQL and the vector store now (the running server does it, or this process)",
        ),
    ] = False,
) -> None:
    """Check the setup: config, port, data directory, model files, tokens, proxy CA, the
    last reconciliation of SQL and the vector store, and storage (bytes per store; users near
    their quota).

    Every problem comes with a fix. Exits 1 when any check fails (warnings do not count).
    """
    config_check, settings = _check_config(config, _overrides(host, port, data_dir))
    checks = [
        config_check,
        _check_port(settings),
        _check_data_dir(settings),
        *_check_models(settings),
        *_check_secrets(settings, config),
        _check_user_tokens(settings),
        _check_local_mode(settings),
        _check_exposure(settings),
        _check_proxy_ca(settings),
        _check_reconciliation(settings, reconcile),
        _check_storage(settings),
    ]
    failed = [c for c in checks if c.status == "fail"]
    warned = [c for c in checks if c.status == "warn"]
    if as_json:
        common.print_json({"ok": not failed, "checks": [asdict(c) for c in checks]})
    else:
        grid = Table.grid(padding=(0, 1))
        grid.add_column(no_wrap=True)
        grid.add_column(no_wrap=True)
        grid.add_column(overflow="fold")
        for check in checks:
            grid.add_row(_MARKS[check.status], check.name, common.text(check.detail))
            if check.hint:
                grid.add_row("", "", common.text(f"→ {check.hint}"), style="dim")
        out.print(grid)
        summary = f"{len(failed)} failed, {len(warned)} warning{'s' * (len(warned) != 1)}"
        out.print(f"[red]{summary}[/]" if failed else f"[green]ok[/] ({summary})")
    if failed:
        raise typer.Exit(common.EXIT_ERROR)
