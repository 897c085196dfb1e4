"""``ccmem stack up|down|status|logs``: the api, the ui and the proxy as supervised local
processes, for machines without Docker (``deploy-mem0.sh --native`` runs these).

``up`` starts a detached supervisor (its PID in ``data/run/stack.pid``) and waits until every
service is healthy; ``down`` stops it by that PID; ``status`` shows each service's PID, port
and health; ``logs`` prints the end of their logs (``data/logs/<name>.log``). The stack uses
the embedded vector store unless ``storage.qdrant_url`` says otherwise, and the ports from
config.yaml (``server.port``, ``ui.port``, ``proxy.port``).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from ..client.connection import when_down
from ..config import Settings
from ..errors import BadInput, Unavailable
from ..stack import capture, start_lock, supervisor
from ..stack import services as stack_services
from ..stack.services import ServiceSpec
from . import common
from .common import ConfigOpt, JsonOpt, err, out

app = typer.Typer(
    help="Run the api, ui and proxy as supervised local processes (without Docker): up, down, status, logs."
)

ServicesOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--service",
        "-s",
        help="only this service (api, ui or proxy; repeat for more). Default: every one installed",
    ),
]
TIMEOUT_HELP = "seconds to wait for every service to become healthy"
ForegroundOpt = Annotated[
    bool,
    typer.Option(
        "--foreground",
        help="run the supervisor in this process until SIGTERM, without waiting for health "
        "(what a user service runs: `ccmem service install`)",
    ),
]


def available_services(ctx: typer.Context) -> set[str]:
    """The services whose commands this installation of ``ccmem`` has (ui and proxy may not)."""
    # Asked of the running ``ccmem``'s root command: importing the cli package's app from here
    # would be an import cycle (the package imports this module).
    names = set(getattr(ctx.find_root().command, "commands", {}))
    return {service for service, command in stack_services.COMMANDS.items() if command in names}


def _not_ready() -> dict[str, str]:
    """Services whose command exists but cannot run yet, and why."""
    problems: dict[str, str] = {}
    try:
        from .proxy import CHECKOUT, MITMDUMP
    except ImportError:
        return problems
    if not MITMDUMP.exists():
        problems["proxy"] = (
            f"{MITMDUMP} is missing (the proxy's own virtualenv): run ./install.sh"
            if CHECKOUT
            else "the capture proxy needs its own virtualenv: `ccmem proxy --install` makes it "
            "(docs/install.md); the hooks capture without it"
        )
    return problems


def _specs(
    ctx: typer.Context, config: Path | None, services: list[str] | None
) -> tuple[Settings, list[ServiceSpec]]:
    settings = common.settings(config)
    available = available_services(ctx)
    for name, problem in _not_ready().items():
        if name not in available:
            continue
        if services and name in services:
            raise BadInput(f"{name} cannot start: {problem}")
        if not services:
            available.discard(name)
            err.print(f"[yellow]note:[/] {name} left out: {problem}", highlight=False, soft_wrap=True)
    return settings, stack_services.plan(settings, available, services, config)


def _running_supervisor(settings: Settings) -> int | None:
    pid = stack_services.read_pid(stack_services.pid_file(settings))
    return pid if pid is not None and supervisor.is_supervisor(pid) else None


def _tail(path: Path, lines: int) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return "(no log yet)"
    return "\n".join(text.splitlines()[-lines:]) or "(empty)"


# -- up --------------------------------------------------------------------------------------
def up(
    ctx: typer.Context,
    services: ServicesOpt = None,
    timeout: Annotated[float, typer.Option(help=TIMEOUT_HELP)] = 120.0,
    config: ConfigOpt = None,
    foreground: ForegroundOpt = False,
) -> None:
    """Start the stack in the background and wait until every service is healthy.

    Exits 0 when all are healthy (or the stack already runs), 1 when one is not healthy in
    time (the stack keeps running: see `ccmem stack logs`, stop it with `ccmem stack down`).
    With --foreground: the supervisor runs in this process and its exit code is the command's.
    """
    settings, specs = _specs(ctx, config, services)
    # Two starters at once (hooks of parallel sessions, a person typing `ccmem up`) agree on one
    # supervisor: the second waits here and finds the first's (stack/start_lock.py).
    with start_lock.held(stack_services.lock_file(settings)):
        running = _running_supervisor(settings)
        if running is not None:
            out.print(f"the stack already runs (supervisor pid {running}); `ccmem stack status` shows it")
            return
        settings, process = _spawn_supervisor(settings, specs, config, foreground=foreground)
    _wait_healthy(settings, specs, process, timeout)
    _print_endpoints(settings, specs)
    if any(spec.name == "proxy" for spec in specs):
        status = capture.capture_status(settings, _api_url(settings, specs))
        if not status.ok:
            raise Unavailable(
                f"the proxy runs but cannot capture: {status.detail}. The stack keeps running; "
                "`ccmem stack status` shows it"
            )
        err.print(f"[green]✓[/] proxy {status.detail}", highlight=False)


def _spawn_supervisor(
    settings: Settings, specs: list[ServiceSpec], config: Path | None, *, foreground: bool = False
) -> tuple[Settings, subprocess.Popen[bytes]]:
    """Start the detached supervisor and write its PID file before the start lock is let go, so
    that the next starter sees it even before the supervisor has written the file itself. With
    ``foreground`` this process becomes the supervisor (the lock's descriptor closes on exec)."""
    for spec in specs:
        if supervisor.port_taken(spec):
            raise BadInput(
                f"port {spec.port} ({spec.name}) is taken by another program; stop it or choose "
                f"another port in config.yaml ({_port_key(spec.name)})"
            )
    if any(spec.name == "proxy" for spec in specs):
        env_file = common.config_file(config).parent / ".env"
        user = capture.provision_token(settings, env_file, common.identity(settings).create_token)
        if user is not None:
            err.print(
                f"created the capture proxy's token for {user} "
                f"({capture.PROXY_TOKEN_ENV} in {env_file}, mode 0600)",
                highlight=False,
            )
            settings = common.settings(config)
    logs = stack_services.logs_dir(settings)
    stack_services.private_dir(logs)
    argv = [sys.executable, "-m", "claude_code_memory.cli", "stack", "supervise"]
    argv += [arg for spec in specs for arg in ("--service", spec.name)]
    if config is not None:
        argv += ["--config", str(config)]
    if foreground:
        # The same process becomes the supervisor: a service manager watches the PID it started,
        # and `ccmem stack status` / `ccmem down` know the supervisor by its command line.
        err.print(f"supervisor runs in the foreground (pid {os.getpid()})", highlight=False)
        sys.stdout.flush()
        sys.stderr.flush()
        os.execv(sys.executable, argv)
    with stack_services.open_log(logs / "stack.log") as log:
        # A session of its own: the stack outlives this command and the terminal.
        process = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
    stack_services.write_pid(stack_services.pid_file(settings), process.pid)
    err.print(f"supervisor started (pid {process.pid}); logs in {logs}", highlight=False, soft_wrap=True)
    return settings, process


def _api_url(settings: Settings, specs: list[ServiceSpec]) -> str:
    """Where the stack's proxy delivers captures: the stack's api, else proxy.api_url."""
    api = next((spec for spec in specs if spec.name == "api"), None)
    return api.url if api is not None else settings.proxy.api_url.rstrip("/")


def _port_key(service: str) -> str:
    return {"api": "server.port", "ui": "ui.port", "proxy": "proxy.port"}[service]


#: A service counts as healthy once it has answered for this long under the same PID (a
#: process that opens its port and then dies of a bad setting must not pass).
CONFIRM_SECONDS = 2.0


def _service_pid(settings: Settings, name: str) -> int | None:
    state = stack_services.read_state(stack_services.state_file(settings))
    service = state.services.get(name) if state else None
    return service.pid if service else None


def _wait_healthy(
    settings: Settings, specs: list[ServiceSpec], process: subprocess.Popen[bytes], timeout: float
) -> None:
    started = time.monotonic()
    pending = list(specs)
    first_ok: dict[str, tuple[int | None, float]] = {}
    while pending:
        code = process.poll()
        if code is not None:
            raise Unavailable(
                f"the stack supervisor exited with code {code}:\n"
                f"{_tail(stack_services.logs_dir(settings) / 'stack.log', 15)}"
            )
        for spec in list(pending):
            pid = _service_pid(settings, spec.name)
            if pid is None or not supervisor.healthy(spec):
                first_ok.pop(spec.name, None)
                continue
            seen_pid, since = first_ok.setdefault(spec.name, (pid, time.monotonic()))
            if seen_pid != pid:
                first_ok[spec.name] = (pid, time.monotonic())
            elif time.monotonic() - since >= CONFIRM_SECONDS:
                pending.remove(spec)
                err.print(
                    f"[green]✓[/] {spec.name} healthy at {spec.url} after {time.monotonic() - started:.1f} s",
                    highlight=False,
                )
        if pending and time.monotonic() - started > timeout:
            state = stack_services.read_state(stack_services.state_file(settings))
            details = []
            for spec in pending:
                service = state.services.get(spec.name) if state else None
                restarts = f", {service.restarts} restarts, last exit {service.last_exit}" if service else ""
                log = stack_services.logs_dir(settings) / f"{spec.name}.log"
                details.append(f"--- {spec.name} ({spec.url}{restarts}); end of {log}:\n{_tail(log, 15)}")
            names = ", ".join(spec.name for spec in pending)
            raise Unavailable(
                f"not healthy after {timeout:.0f} s: {names}\n"
                + "\n".join(details)
                + "\nThe stack keeps running (it restarts crashed services); `ccmem stack down` stops it."
            )
        if pending:
            time.sleep(0.25)


def _print_endpoints(settings: Settings, specs: list[ServiceSpec]) -> None:
    by_name = {spec.name: spec for spec in specs}
    lines = []
    if "api" in by_name:
        api = by_name["api"].url
        client = settings.mem0.mcp.client_name
        lines += [
            f"api    {api}  (REST, OpenAPI docs at {api}/docs)",
            f"mcp    {api}/mcp/{client}/sse/<user>  and  {api}/mcp/{client}/http/<user>",
        ]
    if "ui" in by_name:
        lines.append(f"ui     {by_name['ui'].url}")
    if "proxy" in by_name:
        proxy = by_name["proxy"]
        lines.append(f"proxy  HTTPS_PROXY=http://{proxy.address}:{proxy.port}")
    for line in lines:
        out.print(common.text(line), soft_wrap=True)
    out.print(
        common.text("status: ccmem status   stop: ccmem down   logs: ccmem stack logs"),
        soft_wrap=True,
    )


# -- down ------------------------------------------------------------------------------------
def down(
    timeout: Annotated[float, typer.Option(help="seconds to wait for a clean stop before SIGKILL")] = 30.0,
    config: ConfigOpt = None,
) -> None:
    """Stop the stack: SIGTERM to the supervisor (it stops its services), SIGKILL after the timeout."""
    settings = common.settings(config)
    pid_path, state_path = stack_services.pid_file(settings), stack_services.state_file(settings)
    state = stack_services.read_state(state_path)
    pid = _running_supervisor(settings)
    # The services' PIDs, checked to be ours, in case the supervisor does not stop in time.
    children = [
        s.pid for s in (state.services.values() if state else []) if s.pid and supervisor.is_service(s.pid)
    ]
    if pid is None and not children:
        for leftover in (pid_path, state_path):
            leftover.unlink(missing_ok=True)
        out.print("the stack is not running")
        return
    targets = [pid] if pid is not None else children
    killed = supervisor.stop_pids(targets, timeout)
    if killed and pid is not None:
        # The supervisor did not get its services down in time: they go the same way.
        killed += supervisor.stop_pids([c for c in children if supervisor.alive(c)], 0)
    for leftover in (pid_path, state_path):
        leftover.unlink(missing_ok=True)
    what = f"supervisor pid {pid}" if pid is not None else f"pids {', '.join(map(str, children))}"
    suffix = f" (killed after {timeout:.0f} s: {', '.join(map(str, killed))})" if killed else ""
    out.print(f"stopped the stack ({what}){suffix}")


# -- status ----------------------------------------------------------------------------------
def status(as_json: JsonOpt = False, config: ConfigOpt = None) -> None:
    """Each service's PID, port, restarts and health.

    Exits 0 when every service is healthy, 1 when one is not, 3 when the stack is not running.
    """
    settings = common.settings(config)
    pid = _running_supervisor(settings)
    state = stack_services.read_state(stack_services.state_file(settings)) if pid is not None else None
    if pid is None or state is None:
        if as_json:
            common.print_json({"running": False, "supervisor_pid": None, "services": []})
        err.print(f"the stack is not running; {when_down(common.server_url(settings))}", highlight=False)
        raise typer.Exit(common.EXIT_UNREACHABLE)
    rows: list[dict[str, Any]] = []
    specs = stack_services.plan(settings, set(state.services), list(state.services))
    capture_line = ""
    for name, service in state.services.items():
        spec = next(
            (s for s in stack_services.plan(settings, {name}, [name]) if s.name == name),
            None,
        )
        up_now = service.pid is not None and supervisor.alive(service.pid)
        is_healthy = bool(up_now and spec is not None and supervisor.healthy(spec))
        row: dict[str, Any] = {
            "name": name,
            "pid": service.pid if up_now else None,
            "port": service.port,
            "url": service.url,
            "status": service.status,
            "healthy": is_healthy,
            "restarts": service.restarts,
            "last_exit": service.last_exit,
            "log": service.log,
        }
        if name == "proxy":
            # A proxy whose token the api refuses answers on its port and captures nothing.
            captures = capture.capture_status(settings, _api_url(settings, specs))
            row |= {"captures": captures.ok, "capture": captures.detail}
            row["healthy"] = is_healthy and captures.ok
            capture_line = f"capture: {'ok' if captures.ok else 'NOT WORKING'}: {captures.detail}"
        rows.append(row)
    all_healthy = all(row["healthy"] for row in rows)
    if as_json:
        common.print_json({"running": True, "supervisor_pid": pid, "healthy": all_healthy, "services": rows})
    else:
        table = Table(
            "service", "pid", "port", "health", "restarts", "log", title=f"stack (supervisor pid {pid})"
        )
        for row in rows:
            health = "[green]healthy[/]" if row["healthy"] else f"[red]{row['status']}[/]"
            if row["status"] == "running" and not row["healthy"] and row.get("captures") is False:
                health = "[red]no capture[/]"
            table.add_row(
                row["name"],
                str(row["pid"] or "-"),
                str(row["port"]),
                health,
                str(row["restarts"]),
                common.text(Path(row["log"]).name),
            )
        out.print(table)
        # Whole paths under the table: a table column would cut them to the terminal's width.
        out.print(common.text(f"logs in {stack_services.logs_dir(settings)}"), soft_wrap=True)
        if capture_line:
            out.print(common.text(capture_line), soft_wrap=True)
    if not all_healthy:
        raise typer.Exit(common.EXIT_ERROR)


# -- logs ------------------------------------------------------------------------------------
def logs(
    service: Annotated[
        str | None, typer.Argument(help="api, ui, proxy or stack (the supervisor); default: all")
    ] = None,
    lines: Annotated[int, typer.Option("--lines", "-n", min=1, help="how many lines from the end")] = 40,
    config: ConfigOpt = None,
) -> None:
    """Print the end of the services' logs (data/logs/<service>.log)."""
    settings = common.settings(config)
    known = (*stack_services.SERVICE_ORDER, "stack")
    if service is not None and service not in known:
        raise BadInput(f"unknown service {service!r}; choose one of {', '.join(known)}")
    directory = stack_services.logs_dir(settings)
    names = [service] if service else [n for n in known if (directory / f"{n}.log").exists()]
    if not names:
        out.print(f"no logs yet in {directory}")
        return
    for name in names:
        path = directory / f"{name}.log"
        out.print(common.text(f"==> {path} <=="), style="bold")
        print(_tail(path, lines))


# -- supervise (internal) ----------------------------------------------------------------------
def supervise(ctx: typer.Context, services: ServicesOpt = None, config: ConfigOpt = None) -> None:
    """Run the supervisor in the foreground (what `ccmem stack up` starts in the background)."""
    common.private_files()  # the services' logs, and the services themselves
    settings, specs = _specs(ctx, config, services)
    raise typer.Exit(supervisor.Supervisor(settings, specs).run())


app.command()(up)
app.command()(down)
app.command()(status)
app.command()(logs)
app.command(hidden=True)(supervise)
