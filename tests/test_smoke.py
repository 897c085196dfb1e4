"""``python test_integration.py``, the repository's smoke test, run as a user runs it: with the
venv's python, in a directory holding ``config.yaml`` and ``.env``, against a real server.

* With only the admin token in ``.env`` it checks add → search → context → list → summary →
  delete as the user ``integration-test``, prints six ✓ lines, exits 0 and leaves nothing behind.
* With a user token (``--token``, ``--user``) over Streamable HTTP it does the same and deletes
  only what it wrote.
* A step that fails prints ✗ (the rest are skipped) and exits 1.
* With the server stopped it exits 3 with one paragraph that says how to start it.
"""

from __future__ import annotations

import http.server
import shutil
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.processes import free_port
from tests.support.server import REPO_ROOT, MemoryServer, ccmem_bin

pytestmark = pytest.mark.timeout(300)

SCRIPT = REPO_ROOT / "test_integration.py"
STEPS = ["add", "search", "context", "list", "summary", "delete"]


def venv_python() -> Path:
    """The python of the venv that has ``ccmem`` (``.venv/bin/python`` under README's commands)."""
    return ccmem_bin().parent / "python"


def stack_dir(tmp_path: Path, **env_lines: str) -> Path:
    """A directory laid out like a checkout: config.yaml, and .env with the given settings."""
    where = tmp_path / "checkout"
    where.mkdir()
    shutil.copyfile(REPO_ROOT / "config.yaml", where / "config.yaml")
    env_file = where / ".env"
    env_file.write_text("".join(f"{key}={value}\n" for key, value in env_lines.items()))
    env_file.chmod(0o600)
    return where


def system_python() -> Path:
    """Debian's python3, which has none of the package's dependencies."""
    python = Path("/usr/bin/python3")
    assert python.exists(), "no /usr/bin/python3 (apt-get install python3)"
    lacks = subprocess.run([str(python), "-c", "import httpx"], capture_output=True, check=False)
    assert lacks.returncode != 0, f"{python} has httpx installed: it cannot show the re-execution"
    return python


def run_script(
    server: MemoryServer, cwd: Path, *args: str, python: Path | None = None
) -> subprocess.CompletedProcess[str]:
    # The server's environment without its CCMEM_* settings: the script finds them in the
    # checkout-like directory's config.yaml and .env, named as a project's config must be.
    env = {k: v for k, v in server.env.items() if not k.startswith("CCMEM_")}
    env["CCMEM_CONFIG"] = str(cwd / "config.yaml")
    return subprocess.run(
        [str(python or venv_python()), str(SCRIPT), *args],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )


def step_lines(completed: subprocess.CompletedProcess[str]) -> dict[str, str]:
    lines = {}
    for line in completed.stdout.splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[0] in "✓✗-" and parts[1] in STEPS:
            lines[parts[1]] = line
    return lines


def describe(completed: subprocess.CompletedProcess[str], server: MemoryServer) -> str:
    return (
        f"exit {completed.returncode}\n--- stdout ---\n{completed.stdout}\n--- stderr ---\n"
        f"{completed.stderr}\n--- server log ---\n{server.log()}"
    )


def memories_of(server: MemoryServer, user: str) -> list[dict]:
    response = httpx.get(
        f"{server.base_url}/api/v1/memories",
        params={"user_id": user, "size": 100},
        headers=server.admin_headers(),
        timeout=30,
    )
    if response.status_code == 404:  # the user was never created
        return []
    response.raise_for_status()
    return response.json()["items"]


@pytest.fixture(scope="module")
def memory_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MemoryServer]:
    with MemoryServer(tmp_path_factory.mktemp("smoke-server")) as server:
        yield server


def test_passes_against_a_running_server_with_the_admin_token_from_env(
    memory_server: MemoryServer, tmp_path: Path
) -> None:
    server = memory_server
    checkout = stack_dir(tmp_path, CCMEM_ADMIN_TOKEN=server.admin_token, CCMEM_SERVER__PORT=str(server.port))

    completed = run_script(server, checkout)

    assert completed.returncode == 0, describe(completed, server)
    lines = step_lines(completed)
    assert list(lines) == STEPS, describe(completed, server)
    assert all(line.startswith("✓") and " ms " in line for line in lines.values()), completed.stdout
    assert f"at {server.base_url}, user integration-test (admin token)" in completed.stdout
    assert memories_of(server, "integration-test") == []  # it cleaned up after itself


def test_runs_with_a_python_that_lacks_its_packages_by_re_executing_itself(
    memory_server: MemoryServer, tmp_path: Path
) -> None:
    # `python3 test_integration.py`, as the design card says: the system python has no httpx, so
    # the script runs itself again with the checkout's .venv/bin/python.
    server = memory_server
    checkout = stack_dir(tmp_path, CCMEM_ADMIN_TOKEN=server.admin_token, CCMEM_SERVER__PORT=str(server.port))

    completed = run_script(server, checkout, python=system_python())

    assert completed.returncode == 0, describe(completed, server)
    assert list(step_lines(completed)) == STEPS, describe(completed, server)
    assert "ModuleNotFoundError" not in completed.stderr


def test_passes_with_a_user_token_over_http_and_deletes_only_its_own(
    memory_server: MemoryServer, tmp_path: Path
) -> None:
    server = memory_server
    token = server.make_token("smoker")
    kept = httpx.post(
        f"{server.base_url}/api/v1/memories",
        json={"text": "The smoker's own memory must survive the check"},
        headers={"Authorization": f"Bearer {token}"},
        timeout=30,
    ).json()["id"]
    checkout = stack_dir(tmp_path)  # no admin token anywhere

    completed = run_script(
        server,
        checkout,
        "--url",
        server.base_url,
        "--token",
        token,
        "--user",
        "smoker",
        "--transport",
        "http",
    )

    assert completed.returncode == 0, describe(completed, server)
    assert all(line.startswith("✓") for line in step_lines(completed).values())
    assert "user smoker (user token), MCP over http" in completed.stdout
    assert [m["id"] for m in memories_of(server, "smoker")] == [kept]


def test_a_failing_step_exits_1(memory_server: MemoryServer, tmp_path: Path) -> None:
    server = memory_server
    checkout = stack_dir(tmp_path)

    completed = run_script(
        server, checkout, "--url", server.base_url, "--token", "not-a-token", "--user", "x"
    )

    assert completed.returncode == 1, describe(completed, server)
    lines = step_lines(completed)
    assert lines["add"].startswith("✗ add") and "401" in lines["add"], completed.stdout
    assert all(lines[name].startswith("- ") for name in STEPS[1:]), completed.stdout
    assert "Traceback" not in completed.stderr


def test_a_stopped_server_exits_3_with_how_to_start_it(server: MemoryServer, tmp_path: Path) -> None:
    checkout = stack_dir(tmp_path, CCMEM_ADMIN_TOKEN=server.admin_token, CCMEM_SERVER__PORT=str(server.port))
    server.stop()

    completed = run_script(server, checkout)

    assert completed.returncode == 3, describe(completed, server)
    assert completed.stdout == "" and "Traceback" not in completed.stderr
    message = completed.stderr.strip()
    assert "\n" not in message, message  # one paragraph
    assert f"No claude-code-memory server is answering at {server.base_url}" in message
    assert "ccmem serve" in message and "--url" in message


def test_no_server_at_a_given_url_exits_3(memory_server: MemoryServer, tmp_path: Path) -> None:
    dead = f"http://127.0.0.1:{free_port()}"
    completed = run_script(memory_server, stack_dir(tmp_path), "--url", dead, "--token", "t", "--user", "u")
    assert completed.returncode == 3 and dead in completed.stderr


def test_another_program_on_the_port_is_named_not_dumped(memory_server: MemoryServer, tmp_path: Path) -> None:
    """Another web server on the port: one clear sentence, not its HTML 404 page."""
    page = b"<!DOCTYPE html><html><body><h1>404 Not Found</h1></body></html>"

    class Stranger(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - the standard library's name
            self.send_response(404)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(page)))
            self.end_headers()
            self.wfile.write(page)

        def log_message(self, *args: object) -> None:
            pass

    stranger = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Stranger)
    threading.Thread(target=stranger.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{stranger.server_address[1]}"
        completed = run_script(
            memory_server, stack_dir(tmp_path), "--url", url, "--token", "t", "--user", "u"
        )
    finally:
        stranger.shutdown()
        stranger.server_close()
    assert completed.returncode == 3, completed.stdout + completed.stderr
    assert f"Something answers at {url}, but it is not a claude-code-memory server" in completed.stderr
    assert "HTTP 404 (text/html)" in completed.stderr and "DOCTYPE" not in completed.stderr + completed.stdout


@pytest.mark.integration
def test_says_in_one_line_what_to_run_when_no_installation_is_found(tmp_path: Path) -> None:
    # A copy of the script with no .venv beside it and no ccmem on PATH: nothing to re-execute.
    script = tmp_path / "test_integration.py"
    shutil.copyfile(SCRIPT, script)
    completed = subprocess.run(
        [str(system_python()), str(script)],
        cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert completed.returncode == 2, completed.stderr
    lines = completed.stderr.strip().splitlines()
    assert len(lines) == 1 and ".venv/bin/python test_integration.py" in lines[0], completed.stderr
