"""``ccmem stack``: the same services as docker-compose.yml, as supervised local processes.

The real thing end to end: ``ccmem stack up`` in a directory laid out like a checkout (its own
config.yaml, .env and free loopback ports), ``python test_integration.py`` against it, a
crashed API started again by the supervisor, ``status``, ``logs``, and ``down`` leaving no
process and no open port behind. Then the pure parts: the plan of services and the backoff.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from claude_code_memory.config import Settings, load_settings
from claude_code_memory.errors import BadInput
from claude_code_memory.stack.services import Backoff, plan, read_state
from claude_code_memory.stack.supervisor import alive
from tests.support.fake_anthropic import FakeAnthropic, always_text
from tests.support.processes import free_port, port_open, wait_until
from tests.support.server import REPO_ROOT, ccmem_bin

pytestmark = pytest.mark.timeout(420)


@dataclass
class Checkout:
    root: Path
    env: dict[str, str]
    ports: dict[str, int]

    def ccmem(self, *args: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(ccmem_bin()), *args],
            cwd=self.root,
            env=self.env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    @property
    def data(self) -> Path:
        return self.root / "data"

    def state(self) -> dict:
        return json.loads((self.data / "run" / "stack.json").read_text())

    def supervisor_pid(self) -> int | None:
        path = self.data / "run" / "stack.pid"
        return int(path.read_text()) if path.exists() else None


@pytest.fixture
def checkout(tmp_path: Path) -> Iterator[Checkout]:
    root = tmp_path / "checkout"
    root.mkdir()
    shutil.copyfile(REPO_ROOT / "config.yaml", root / "config.yaml")
    env_file = root / ".env"
    env_file.write_text(f"CCMEM_ADMIN_TOKEN={secrets.token_urlsafe(32)}\n")
    env_file.chmod(0o600)
    ports = {"api": free_port(), "ui": free_port(), "proxy": free_port()}
    # The developer's settings must not decide how the stack runs; only ports and the home.
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("CCMEM_", "QDRANT_", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"))
        and k not in ("DATABASE_URL", "MEM0_DIR")
    }
    env.update(
        HOME=str(tmp_path / "home"),
        # A copy of a checkout holds no code of its own: its config is named, as ccmem reads
        # none from the directory it runs in.
        CCMEM_CONFIG=str(root / "config.yaml"),
        CCMEM_SERVER__PORT=str(ports["api"]),
        CCMEM_UI__PORT=str(ports["ui"]),
        CCMEM_PROXY__PORT=str(ports["proxy"]),
    )
    (tmp_path / "home").mkdir()
    where = Checkout(root, env, ports)
    yield where
    # Whatever happened: down, then anything still running by its recorded PID.
    state = read_state(where.data / "run" / "stack.json")
    pids = [s.pid for s in state.services.values() if s.pid] if state else []
    where.ccmem("stack", "down", timeout=60)
    for pid in [where.supervisor_pid(), *pids]:
        if pid and alive(pid):
            os.kill(pid, signal.SIGKILL)


def describe(completed: subprocess.CompletedProcess[str], where: Checkout) -> str:
    logs = "\n".join(
        f"--- {path.name} ---\n{path.read_text(errors='replace')[-3000:]}"
        for path in sorted((where.data / "logs").glob("*.log"))
    )
    return f"exit {completed.returncode}\n{completed.stdout}\n{completed.stderr}\n{logs}"


@pytest.fixture
def upstream() -> Iterator[FakeAnthropic]:
    with FakeAnthropic(always_text("Noted: the staging host is pg-staging-2.")) as fake:
        yield fake


def test_up_integration_restart_down(checkout: Checkout, upstream: FakeAnthropic) -> None:
    """The newcomer's path: stack up → token → smoke test → a turn captured through the proxy
    (its token made by `up`) → stack down, with a restart and a revoked proxy token between."""
    timings = {}
    # Reverse mode to the fake upstream: forward mode intercepts api.anthropic.com only.
    checkout.env |= {
        "USER": "newcomer",
        "LOGNAME": "newcomer",
        "CCMEM_PROXY__MODE": "reverse",
        "CCMEM_PROXY__REVERSE_UPSTREAM": upstream.base_url,
    }
    started = time.monotonic()
    upped = checkout.ccmem("stack", "up", "--timeout", "180")
    timings["up"] = time.monotonic() - started
    assert upped.returncode == 0, describe(upped, checkout)
    # The proxy's token was made for the local user and kept in .env like the admin token.
    env_file = checkout.root / ".env"
    assert (env_file.stat().st_mode & 0o777) == 0o600
    [proxy_token] = [
        line.split("=", 1)[1]
        for line in env_file.read_text().splitlines()
        if line.startswith("CCMEM_PROXY_TOKEN=")
    ]
    assert proxy_token and proxy_token not in upped.stdout + upped.stderr
    assert "created the capture proxy's token for newcomer" in upped.stderr
    assert "✓ proxy captures for newcomer" in upped.stderr
    api_url = f"http://127.0.0.1:{checkout.ports['api']}"
    assert api_url in upped.stdout
    assert f"{api_url}/mcp/claude-code/sse/<user>" in upped.stdout
    services = checkout.state()["services"]
    # The same three services as docker-compose.yml (the proxy needs proxy/.venv: ./install.sh).
    assert list(services) == ["api", "ui", "proxy"]
    supervisor = checkout.supervisor_pid()
    assert supervisor and alive(supervisor)
    # The ui and the proxy were pointed at this api (config.yaml's api_url says port 8765).
    for name, variable in (("ui", "CCMEM_UI__API_URL"), ("proxy", "CCMEM_PROXY__API_URL")):
        environ = Path(f"/proc/{services[name]['pid']}/environ").read_bytes().split(b"\0")
        assert f"{variable}={api_url}".encode() in environ, name

    # The smoke test, as a user runs it: the venv's python, in the checkout, admin token in .env.
    started = time.monotonic()
    smoke = subprocess.run(
        [str(ccmem_bin().parent / "python"), str(REPO_ROOT / "test_integration.py"), "--url", api_url],
        cwd=checkout.root,
        env=checkout.env,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    timings["integration"] = time.monotonic() - started
    assert smoke.returncode == 0, describe(smoke, checkout)
    assert smoke.stdout.count("✓") == 6, smoke.stdout

    # A turn through the proxy reaches the newcomer's consent queue, with no token set by hand.
    proxy_url = f"http://127.0.0.1:{checkout.ports['proxy']}"
    turn = {
        "model": "claude-sonnet-4-5",
        "max_tokens": 50,
        "messages": [{"role": "user", "content": "Remember: the staging host is pg-staging-2."}],
    }
    answered = httpx.post(f"{proxy_url}/v1/messages", json=turn, headers={"x-api-key": "dummy"}, timeout=60)
    assert answered.status_code == 200, answered.text
    token = checkout.ccmem("token", "create", "--user", "newcomer")
    assert token.returncode == 0, describe(token, checkout)
    mine = {"Authorization": f"Bearer {token.stdout.strip()}"}

    def queued() -> list[str]:
        items = httpx.get(f"{api_url}/api/v1/consent/pending", headers=mine, timeout=30).json()["items"]
        return [item["content"] for item in items]

    wait_until(lambda: any("pg-staging-2" in text for text in queued()), timeout=60, what="the captured turn")

    # Every service has its log under data/logs, and status sees them all healthy.
    for name in services:
        assert (checkout.data / "logs" / f"{name}.log").stat().st_size > 0
    status = checkout.ccmem("stack", "status", "--json")
    assert status.returncode == 0, describe(status, checkout)
    report = json.loads(status.stdout)
    assert report["running"] and report["supervisor_pid"] == supervisor
    assert {row["name"]: row["healthy"] for row in report["services"]} == dict.fromkeys(services, True)
    [proxy_row] = [row for row in report["services"] if row["name"] == "proxy"]
    assert proxy_row["captures"] is True and proxy_row["capture"] == "captures for newcomer"
    table = checkout.ccmem("stack", "status")
    assert "capture: ok: captures for newcomer" in table.stdout
    assert f"logs in {checkout.data / 'logs'}" in table.stdout  # whole, however narrow the terminal

    # A crashed API is started again, and answers again.
    old_api = services["api"]["pid"]
    os.kill(old_api, signal.SIGKILL)
    started = time.monotonic()
    wait_until(
        lambda: (
            checkout.state()["services"]["api"]["restarts"] == 1
            and checkout.ccmem("stack", "status").returncode == 0
        ),
        timeout=120,
        what="the restarted api",
    )
    timings["restart"] = time.monotonic() - started
    api = checkout.state()["services"]["api"]
    assert api["pid"] != old_api and api["last_exit"] == -signal.SIGKILL
    assert "exited with -9" in (checkout.data / "logs" / "stack.log").read_text()
    logs = checkout.ccmem("stack", "logs", "api", "-n", "5")
    assert logs.returncode == 0 and "api.log" in logs.stdout

    # A proxy whose token the api refuses is not called healthy.
    listed = json.loads(checkout.ccmem("token", "list", "--user", "newcomer", "--json").stdout)
    [made] = [t for t in listed if t["name"] == "capture proxy (ccmem stack up)"]
    assert checkout.ccmem("token", "revoke", made["prefix"]).returncode == 0
    refused = checkout.ccmem("stack", "status")
    assert refused.returncode == 1 and "capture: NOT WORKING" in refused.stdout, refused.stdout

    # A second `up` sees the running stack and starts nothing.
    again = checkout.ccmem("stack", "up")
    assert again.returncode == 0 and "already runs" in again.stdout
    assert checkout.supervisor_pid() == supervisor

    children = [s["pid"] for s in checkout.state()["services"].values()]
    started = time.monotonic()
    stopped = checkout.ccmem("stack", "down")
    timings["down"] = time.monotonic() - started
    assert stopped.returncode == 0, describe(stopped, checkout)
    assert "stopped the stack" in stopped.stdout
    for pid in [supervisor, *children]:
        assert not alive(pid), f"pid {pid} still runs after down"
    for port in checkout.ports.values():
        assert not port_open(port)()
    assert not (checkout.data / "run" / "stack.pid").exists()

    after = checkout.ccmem("stack", "status")
    assert after.returncode == 3 and "not running" in after.stderr
    assert checkout.ccmem("stack", "down").stdout.strip() == "the stack is not running"
    print("native stack timings: " + ", ".join(f"{k} {v:.1f} s" for k, v in timings.items()))


def test_up_in_the_foreground_then_status_and_down(checkout: Checkout) -> None:
    """What the user service runs: `ccmem up --foreground` becomes the supervisor in its own
    process (the PID a service manager watches), `ccmem status` shows each service, and
    `ccmem down` stops it with exit 0 (a clean stop, which the service manager leaves stopped)."""
    config = checkout.root / "config.yaml"
    runner = subprocess.Popen(
        [str(ccmem_bin()), "up", "--foreground", "--service", "api", "--config", str(config)],
        cwd=checkout.root,
        env=checkout.env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        api_url = f"http://127.0.0.1:{checkout.ports['api']}"
        wait_until(
            lambda: (
                httpx.get(f"{api_url}/health", timeout=2).status_code == 200
                if port_open(checkout.ports["api"])()
                else False
            ),
            timeout=180,
            what="the api under `up --foreground`",
        )
        assert checkout.supervisor_pid() == runner.pid  # the same process, not a detached one
        status = checkout.ccmem("status", "--json", "--url", api_url)
        assert status.returncode == 0, describe(status, checkout)
        rows = {row["name"]: row for row in json.loads(status.stdout)["services"]}
        api_pid = checkout.state()["services"]["api"]["pid"]
        assert rows["api"] == {
            "name": "api", "running": True, "pid": api_pid, "supervised": True,
            "port": checkout.ports["api"], "healthy": True,
        }  # fmt: skip
        assert rows["ui"]["running"] is False and rows["proxy"]["running"] is False
        table = checkout.ccmem("status", "--url", api_url).stdout
        assert f"api running, pid {api_pid}, port {checkout.ports['api']}, healthy" in " ".join(table.split())

        stopped = checkout.ccmem("down")

        assert stopped.returncode == 0 and f"supervisor pid {runner.pid}" in stopped.stdout, stopped.stderr
        assert runner.wait(timeout=60) == 0
        assert not alive(api_pid) and not port_open(checkout.ports["api"])()
        assert checkout.ccmem("down").stdout.strip() == "the stack is not running"
    finally:
        if runner.poll() is None:
            runner.kill()
            runner.wait()
    assert "supervisor runs in the foreground" in (runner.stdout.read() if runner.stdout else "")


def test_deploy_script_native_up_status_down(checkout: Checkout) -> None:
    """`deploy-mem0.sh --native`, as a user runs it from a checkout: up with the connection
    instructions, --status, --down (without --native: it finds what runs)."""
    for name in ("deploy-mem0.sh", "docker-compose.yml", "docker-compose.embedded.yml"):
        shutil.copy2(REPO_ROOT / name, checkout.root / name)
    (checkout.root / ".venv").symlink_to(ccmem_bin().parent.parent)
    checkout.env["USER"] = "alice"

    def deploy(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["bash", str(checkout.root / "deploy-mem0.sh"), *args],
            cwd=checkout.root,
            env=checkout.env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )

    upped = deploy("--native", "--timeout", "180")
    assert upped.returncode == 0, describe(upped, checkout)
    api = f"http://127.0.0.1:{checkout.ports['api']}"
    add = f"claude mcp add --scope user --transport sse memory {api}/mcp/claude-code/sse/alice"
    assert add in upped.stdout
    assert "ccmem token create --user alice" in upped.stdout and ".venv/bin/ccmem" not in upped.stdout
    assert f"HTTPS_PROXY=http://127.0.0.1:{checkout.ports['proxy']}" in upped.stdout
    supervisor = checkout.supervisor_pid()
    assert supervisor and alive(supervisor)

    status = deploy("--status")
    assert status.returncode == 0, describe(status, checkout)
    assert "healthy" in status.stdout

    stopped = deploy("--down")
    assert stopped.returncode == 0, describe(stopped, checkout)
    assert "stopped the stack" in stopped.stdout
    assert not alive(supervisor)
    after = deploy("--status")
    assert after.returncode == 3 and "Nothing runs" in after.stdout
    assert "Nothing runs" in deploy("--down").stdout


@pytest.mark.integration
def test_deploy_script_needs_install_first(tmp_path: Path) -> None:
    shutil.copy2(REPO_ROOT / "deploy-mem0.sh", tmp_path / "deploy-mem0.sh")
    completed = subprocess.run(
        ["bash", str(tmp_path / "deploy-mem0.sh"), "--native"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert completed.returncode == 1
    assert "run ./install.sh first" in completed.stderr
    bad = subprocess.run(
        ["bash", str(tmp_path / "deploy-mem0.sh"), "--frobnicate"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert bad.returncode == 1 and "unknown option '--frobnicate'" in bad.stderr


def test_up_refuses_a_taken_port(checkout: Checkout) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", checkout.ports["api"]))
        taken.listen()
        completed = checkout.ccmem("stack", "up", "--service", "api")
    assert completed.returncode == 1
    assert f"port {checkout.ports['api']} (api) is taken" in completed.stderr
    assert checkout.supervisor_pid() is None


def test_up_reports_a_service_that_never_becomes_healthy(checkout: Checkout) -> None:
    """A broken setting: the api exits at once, again and again. `up` says which service, shows
    the end of its log, and exits 1; the supervisor keeps trying until `down`."""
    checkout.env["CCMEM_STORAGE__DATABASE_URL"] = "postgresql://nobody@127.0.0.1:1/none"
    # The api fails within ~2 s (more on a busy machine) and is started again a second later.
    completed = checkout.ccmem("stack", "up", "--service", "api", "--timeout", "8")
    assert completed.returncode == 1, describe(completed, checkout)
    assert "not healthy after 8 s: api" in completed.stderr
    assert "api.log" in completed.stderr
    # Started again: on a busy machine its first failure may come after `up` gave up (CI once).
    wait_until(
        lambda: checkout.state()["services"]["api"]["restarts"] >= 1,
        timeout=60,
        what="the supervisor to start the failing api again",
    )
    assert checkout.ccmem("stack", "down").returncode == 0
    assert checkout.supervisor_pid() is None


def test_unknown_service_is_bad_usage(checkout: Checkout) -> None:
    completed = checkout.ccmem("stack", "up", "--service", "database")
    assert completed.returncode == 1
    assert "unknown service 'database'" in completed.stderr


# -- the pure parts ----------------------------------------------------------------------------
def settings(**overrides: object) -> Settings:
    return load_settings(config_path=REPO_ROOT / "config.yaml", environ={}, overrides=overrides)


def test_plan_orders_and_checks_services() -> None:
    chosen = plan(settings(), {"api", "ui", "proxy"}, ["proxy", "api"])
    assert [spec.name for spec in chosen] == ["api", "proxy"]
    api = chosen[0]
    assert (api.port, api.probe, api.health_path, api.url) == (
        8765,
        "http",
        "/health",
        "http://127.0.0.1:8765",
    )
    assert api.argv[-1] == "serve"
    assert [spec.name for spec in plan(settings(), {"api"})] == ["api"]
    with pytest.raises(BadInput, match="not available here"):
        plan(settings(), {"api"}, ["ui"])
    with pytest.raises(BadInput, match="both set to port 8765"):
        plan(settings(**{"ui.port": 8765}), {"api", "ui"})
    wildcard = plan(settings(**{"server.host": "0.0.0.0"}), {"api"})[0]
    assert wildcard.url == "http://127.0.0.1:8765"


def test_backoff_grows_and_starts_over_after_a_stable_run() -> None:
    backoff = Backoff()
    assert [backoff.after_exit(0.5) for _ in range(7)] == [1, 2, 4, 8, 16, 30, 30]
    assert backoff.after_exit(300) == 1
    assert backoff.after_exit(0.1) == 2


@pytest.mark.integration
def test_help_is_the_scripts_comment_block_only() -> None:
    for script in ("deploy-mem0.sh", "install.sh"):
        done = subprocess.run(
            ["bash", str(REPO_ROOT / script), "--help"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
        assert done.returncode == 0 and done.stdout.strip(), done.stderr
        assert "set -euo pipefail" not in done.stdout and "Usage" not in done.stderr, script
