"""``ccmem proxy``: run the capture proxy (mitmdump with our addon, from its own virtualenv).

The command only assembles a mitmdump command line from the settings (``proxy:`` in
config.yaml) and replaces itself with it, so SIGTERM and Ctrl-C reach mitmdump directly and it
shuts down cleanly (the addon writes anything still queued to its outbox first). The CA and the
outbox live in ``<data>/proxy/`` (mode 0700), never in the home directory. The API token goes
to the child only through ``CCMEM_PROXY_TOKEN`` in its environment, never on a command line.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Annotated
from urllib.parse import urlsplit

import typer

from ..config import Settings, user_dirs
from ..errors import ConfigError
from . import common
from .common import ConfigOpt, DataDirOpt, err

REPO_ROOT = Path(__file__).resolve().parents[2]
PROXY_DIR = REPO_ROOT / "proxy"
#: A checkout runs proxy/ccmem_proxy.py from proxy/.venv (./install.sh makes it); an installed
#: package runs the addon it ships (capture_addon) from a virtualenv in the user's data
#: directory, which ``ccmem proxy --install`` makes.
CHECKOUT = (PROXY_DIR / "ccmem_proxy.py").is_file()
PACKAGED_ADDON = Path(__file__).resolve().parents[1] / "capture_addon" / "mitmdump_addon.py"
ADDON_SCRIPT = PROXY_DIR / "ccmem_proxy.py" if CHECKOUT else PACKAGED_ADDON
USER_VENV = user_dirs()[1] / "proxy-venv"
VENV = PROXY_DIR / ".venv" if CHECKOUT else USER_VENV
MITMDUMP = VENV / "bin" / "mitmdump"
#: What the proxy's virtualenv holds (proxy/requirements.txt says the same; a test checks).
MITMPROXY_REQUIREMENT = "mitmproxy==11.0.2"
CA_FILE = "mitmproxy-ca-cert.pem"
TOKEN_ENV = "CCMEM_PROXY_TOKEN"

ModeOpt = Annotated[
    str | None,
    typer.Option(
        "--mode", help="forward (HTTPS_PROXY + our CA) or reverse (ANTHROPIC_BASE_URL); default proxy.mode"
    ),
]
PortOpt = Annotated[int | None, typer.Option("--port", help="listen port (default proxy.port, 8080)")]
HostOpt = Annotated[str | None, typer.Option("--host", help="listen address (default proxy.host, 127.0.0.1)")]
InstallOpt = Annotated[
    bool,
    typer.Option(
        "--install",
        help="make the proxy's own virtualenv with mitmproxy (an installed package; a checkout has "
        "./install.sh) and exit",
    ),
]
PrintOpt = Annotated[
    bool,
    typer.Option("--print-command", help="print the mitmdump command line and exit, without starting it"),
]


def confdir(settings: Settings) -> Path:
    return settings.data_path / "proxy"


def _host_pattern(host: str) -> str:
    # mitmproxy matches allow_hosts against "host:port" (the SNI, Host header and address).
    return f"^{re.escape(host)}:\\d+$"


def _reverse_host(settings: Settings) -> str:
    return (urlsplit(settings.proxy.reverse_upstream).hostname or "").lower()


def captured_hosts(settings: Settings) -> list[str]:
    """The hosts whose ``POST /v1/messages`` is captured; in reverse mode its upstream too."""
    hosts = [host.lower() for host in settings.proxy.upstream_hosts]
    if settings.proxy.mode == "reverse" and _reverse_host(settings) not in hosts:
        hosts.append(_reverse_host(settings))
    return hosts


def mitmdump_command(settings: Settings, *, extra: list[str] | None = None) -> list[str]:
    """The mitmdump command line for these settings (no secrets in it)."""
    proxy = settings.proxy
    directory = confdir(settings)
    command = [
        str(MITMDUMP),
        "-s",
        str(ADDON_SCRIPT),
        "--listen-host",
        proxy.host,
        "--listen-port",
        str(proxy.port),
        "--set",
        f"confdir={directory}",
    ]
    if proxy.mode == "reverse":
        command += ["--mode", f"reverse:{proxy.reverse_upstream}"]
    else:
        # Only the upstream hosts are TLS-intercepted; every other host is tunnelled untouched.
        for host in proxy.upstream_hosts:
            command += ["--allow-hosts", _host_pattern(host.lower())]
    options = {
        "ccmem_api_url": proxy.api_url,
        "ccmem_upstream_hosts": ",".join(captured_hosts(settings)),
        "ccmem_user_id": proxy.user_id or "",
        "ccmem_app": proxy.app,
        "ccmem_skip_models": ",".join(proxy.skip_models),
        "ccmem_capture_tool_results": "true" if proxy.capture_tool_results else "false",
        # Redacted before it is written to disk, by the server's own rules.
        "ccmem_mask_pii": "true" if settings.privacy.mask_pii else "false",
        "ccmem_outbox": str(directory / "outbox.db"),
        "ccmem_outbox_max_rows": str(proxy.outbox_max_rows),
        "ccmem_retry_max_seconds": str(proxy.retry_max_seconds),
        "ccmem_memory_tool_bridge": "true" if proxy.memory_tool_bridge else "false",
    }
    for name, value in options.items():
        command += ["--set", f"{name}={value}"]
    return command + list(extra or [])


def client_env(settings: Settings) -> dict[str, str]:
    """What Claude Code (or any Anthropic client) needs in its environment to go through the proxy."""
    proxy = settings.proxy
    listen = f"http://{proxy.host}:{proxy.port}"
    if proxy.mode == "reverse":
        return {"ANTHROPIC_BASE_URL": listen}
    # The memory server (its MCP endpoint) is reached directly, never through the proxy.
    direct = [urlsplit(proxy.api_url).hostname or "127.0.0.1", "127.0.0.1"]
    captured = set(captured_hosts(settings))
    return {
        "HTTPS_PROXY": listen,
        "NODE_EXTRA_CA_CERTS": str(confdir(settings) / CA_FILE),
        "NO_PROXY": ",".join(host for host in dict.fromkeys(direct) if host not in captured),
    }


def child_env(settings: Settings) -> dict[str, str]:
    env = dict(os.environ)
    if CHECKOUT:
        # The addon imports claude_code_memory's standard-library modules from the repository.
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
    if settings.proxy.token:
        env[TOKEN_ENV] = settings.proxy.token
    # mitmdump must not send upstream traffic through a proxy the user set for their clients.
    for name in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"):
        env.pop(name, None)
    return env


def proxy(
    ctx: typer.Context,
    mode: ModeOpt = None,
    port: PortOpt = None,
    host: HostOpt = None,
    data_dir: DataDirOpt = None,
    config: ConfigOpt = None,
    print_command: PrintOpt = False,
    install: InstallOpt = False,
) -> None:
    """Run the capture proxy: Claude conversations through it are stored as memories.

    Extra arguments after `--` go to mitmdump unchanged (e.g. `-- --set ssl_insecure=true`).
    An installed package (no checkout) first needs `ccmem proxy --install`: mitmproxy in a
    virtualenv of its own, apart from the server's packages.
    """
    if install:
        install_venv()
        return
    if mode is not None and mode not in ("forward", "reverse"):
        raise typer.BadParameter(f"{mode!r} is not one of 'forward', 'reverse'", param_hint="--mode")
    overrides = {
        "proxy.mode": mode,
        "proxy.port": port,
        "proxy.host": host,
        **common.data_dir_override(data_dir),
    }
    settings = common.settings(config, overrides)
    command = mitmdump_command(settings, extra=list(ctx.args))
    if print_command:
        common.out.print(shlex.join(command), highlight=False, soft_wrap=True, markup=False)
        return
    if not MITMDUMP.exists():
        how = "run ./install.sh to create it" if CHECKOUT else "run `ccmem proxy --install` to create it"
        raise ConfigError(f"{MITMDUMP} is missing: the proxy has its own virtualenv; {how}")
    common.private_files()  # mitmdump's outbox holds captured turns until they are delivered
    directory = confdir(settings)
    directory.mkdir(parents=True, exist_ok=True)
    directory.chmod(0o700)
    if not settings.proxy.token:
        err.print(f"[yellow]warning:[/] no {TOKEN_ENV}; the memory API will refuse captured turns")
    _announce(settings)
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(command[0], command, child_env(settings))


def install_venv() -> None:
    """The proxy's own virtualenv with mitmproxy (mitmproxy pins h11 and h2 versions the
    server's packages outgrew, so it never shares their environment)."""
    if CHECKOUT:
        raise ConfigError("a checkout's proxy has proxy/.venv: run ./install.sh")
    if not MITMDUMP.exists():
        err.print(f"making {VENV} with {MITMPROXY_REQUIREMENT}", highlight=False, soft_wrap=True)
        steps = (
            [sys.executable, "-m", "venv", "--clear", str(VENV)],
            [str(VENV / "bin" / "python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
             MITMPROXY_REQUIREMENT],
        )  # fmt: skip
        for step in steps:
            completed = subprocess.run(step, capture_output=True, text=True, check=False)
            if completed.returncode != 0:
                said = (completed.stderr.strip() or completed.stdout.strip()).splitlines()
                raise ConfigError(f"{' '.join(step[:4])} failed: {said[-1] if said else 'no output'}")
    common.out.print(f"capture proxy ready: {MITMDUMP}", highlight=False, soft_wrap=True)


def _announce(settings: Settings) -> None:
    proxy = settings.proxy
    lines = [
        f"capture proxy ({proxy.mode} mode) on {proxy.host}:{proxy.port}, "
        f"capturing POST /v1/messages to {', '.join(captured_hosts(settings))} -> {proxy.api_url}",
        "Start Claude Code with:",
        *(f"  export {name}={shlex.quote(value)}" for name, value in client_env(settings).items()),
    ]
    if proxy.mode == "forward":
        lines.append(f"(the CA certificate is created in {confdir(settings)} when the proxy first starts)")
    err.print("\n".join(lines), highlight=False, soft_wrap=True, markup=False)
