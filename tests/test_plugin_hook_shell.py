"""The plugin's hook script (``plugin/scripts/memory_hook.sh``: sh and curl) against a real server,
run as Claude Code runs it (``sh SCRIPT`` with the hook input on stdin and the plugin's options in
its environment): recall and capture with the token from ``CLAUDE_PLUGIN_OPTION_TOKEN``;
one line for the user, once a session, and exit 0 on every failure (the start on demand is
tests/test_hook_autostart.py); standing aside exactly when ``ccmem hooks install``'s hooks
are in a settings file (the rule of ``claude_settings.is_ours``); the token never on a command
line. The end-to-end run through the pinned CLI is tests/test_e2e_plugin.py."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from claude_code_memory.client import claude_settings as cs

from .support.server import MemoryServer, add_memory
from .test_claude_plugin import other_tools_hooks

SCRIPT = Path(__file__).resolve().parents[1] / "plugin" / "scripts" / "memory_hook.sh"
FACT = "The kestrel service deploys with the wrenfinch tool."


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MemoryServer]:
    with MemoryServer(tmp_path_factory.mktemp("plugin-hook-shell")) as running:
        yield running


@pytest.fixture(scope="module")
def token(server: MemoryServer) -> str:
    value = server.make_token(f"ada-{uuid.uuid4().hex[:6]}")
    add_memory(server, value, FACT, project="kestrel")
    return value


def run_hook(
    home: Path,
    body: dict[str, Any],
    url: str,
    token: str | None,
    *,
    path: str | None = None,
    on_socket: bool = False,
) -> str:
    """The script's output for ``body``; ``on_socket``: the input on a socket, as Claude Code
    (Node's child processes) hands it over, else on a pipe."""
    env = {"PATH": path or os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home)}
    env["CLAUDE_PLUGIN_OPTION_SERVER_URL"] = url
    env["CLAUDE_PROJECT_DIR"] = str(home / "kestrel")
    if token is not None:
        env["CLAUDE_PLUGIN_OPTION_TOKEN"] = token
    data = json.dumps(body).encode()
    if on_socket:
        ours, theirs = socket.socketpair()
        with ours, theirs:
            ours.sendall(data)
            ours.shutdown(socket.SHUT_WR)
            done = subprocess.run(
                ["/bin/sh", str(SCRIPT)], stdin=theirs, env=env, cwd=home, capture_output=True, timeout=30
            )
    else:
        done = subprocess.run(
            ["/bin/sh", str(SCRIPT)], input=data, env=env, cwd=home, capture_output=True, timeout=30
        )
    assert done.returncode == 0 and done.stderr == b"", done
    return done.stdout.decode()


def prompt(home: Path) -> dict[str, Any]:
    return {
        "hook_event_name": "UserPromptSubmit",
        "session_id": str(uuid.uuid4()),
        "cwd": str(home / "kestrel"),
        "transcript_path": "/dev/null",
        "prompt": "Which tool deploys the kestrel service?",
    }


@pytest.fixture
def home(tmp_path: Path) -> Path:
    (tmp_path / "kestrel" / ".git").mkdir(parents=True)
    return tmp_path


def test_recall_and_capture_with_the_plugin_s_token(server: MemoryServer, token: str, home: Path) -> None:
    for on_socket in (False, True):
        answer = json.loads(run_hook(home, prompt(home), server.base_url + "/", token, on_socket=on_socket))
        assert "wrenfinch" in answer["hookSpecificOutput"]["additionalContext"]
    stop = prompt(home) | {"hook_event_name": "Stop", "last_assistant_message": "It uses wrenfinch."}
    del stop["prompt"]
    run_hook(home, prompt(home) | {"session_id": stop["session_id"]}, server.base_url, token)
    run_hook(home, stop, server.base_url, token)
    with server.client(token) as client:
        pending = client.get("/api/v1/consent/pending", params={"project": "kestrel"}).json()["items"]
    assert any("It uses wrenfinch." in json.dumps(item) for item in pending)


def told(output: str) -> str:
    """The one line a failing hook gives the user (memory_down.py)."""
    line: str = json.loads(output)["systemMessage"]
    assert line.startswith("claude-code-memory: memory is off") and "\n" not in line, line
    return line


def test_every_failure_tells_once_a_session_and_exits_0(server: MemoryServer, token: str, home: Path) -> None:
    assert "`ccmem connect claude-code`" in told(run_hook(home, prompt(home), server.base_url, "wrong-token"))
    assert "refused this session's token" in told(run_hook(home, prompt(home), server.base_url, None))
    # Nothing listens, and no connection.json says how to start it: the user is told how.
    body = prompt(home)
    assert "start it with `ccmem up`" in told(run_hook(home, body, "http://127.0.0.1:9", token))
    assert run_hook(home, body, "http://127.0.0.1:9", token) == ""  # once a session, not once a prompt
    # A token a header cannot carry is never sent (nor a config line injected with it).
    injected = token + '"\nurl = "http://127.0.0.1:9'
    assert "refused this session's token" in told(run_hook(home, prompt(home), server.base_url, injected))
    # No curl on PATH: memory_hook.py answers instead.
    bare = home / "bin"
    bare.mkdir()
    (bare / "grep").symlink_to(shutil.which("grep") or "/bin/grep")
    # A real interpreter, not a shim (pyenv's is a bash script, and bash is not on this PATH).
    (bare / "python3").symlink_to(
        shutil.which("python3", path="/usr/bin:/bin") or os.path.realpath(sys.executable)
    )
    answer = run_hook(home, prompt(home), server.base_url, token, path=str(bare))
    assert "wrenfinch" in json.loads(answer)["hookSpecificOutput"]["additionalContext"]


@pytest.mark.parametrize("index", range(len(cs.ALL_EVENTS) + len(other_tools_hooks())))
def test_it_stands_aside_exactly_for_ccmem_hooks_install_s_hooks(
    server: MemoryServer, token: str, home: Path, index: int
) -> None:
    hooks = [cs.hook_entry(event, server.base_url) for event in cs.ALL_EVENTS] + other_tools_hooks()
    hook = hooks[index]
    where = home / "kestrel" / ".claude" / "settings.local.json"
    where.parent.mkdir(parents=True)
    where.write_text(json.dumps({"hooks": {"Stop": [{"hooks": [hook]}]}}, indent=2), encoding="utf-8")
    answered = run_hook(home, prompt(home), server.base_url, token) != ""
    assert answered == (not cs.is_ours(hook)), hook


def test_the_token_is_never_on_a_command_line() -> None:
    script = SCRIPT.read_text(encoding="utf-8")
    # Only a here-document (read by the shell itself) holds it, and curl reads that (-K /dev/fd/3).
    uses = [line for line in script.splitlines() if "$token" in line and not line.lstrip().startswith("#")]
    assert uses == ["case $token in", 'header = "Authorization: Bearer $token"'], uses
    assert "curl -K /dev/fd/3 " in script


@pytest.mark.integration  # a listener of its own, to see the request line
def test_it_stamps_the_time_it_ran_as_now(home: Path) -> None:
    """Claude Code's hook input carries no time, so the script sends the time it ran (``?now=``):
    the server reads "yesterday" in the prompt against it (tests/test_search_now.py)."""
    import http.server
    import threading
    from datetime import UTC, datetime
    from urllib.parse import parse_qs, urlsplit

    seen: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            seen.append(self.path)
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(b"{}")

        def log_message(self, *args: Any) -> None:
            pass

    listener = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=listener.serve_forever, daemon=True)
    thread.start()
    try:
        before = datetime.now(UTC).replace(microsecond=0)
        run_hook(home, prompt(home), f"http://127.0.0.1:{listener.server_address[1]}", "t0ken")
        after = datetime.now(UTC)
    finally:
        listener.shutdown()
        listener.server_close()
    [path] = seen
    parts = urlsplit(path)
    assert parts.path == "/api/v1/hooks/claude-code"
    [stamp] = parse_qs(parts.query)["now"]
    assert before <= datetime.fromisoformat(stamp) <= after


def without_curl(home: Path) -> str:
    """A PATH with grep and python3 but no curl: the script hands over to memory_hook.py."""
    bare = home / "bin-no-curl"
    if not bare.exists():
        bare.mkdir()
        (bare / "grep").symlink_to(shutil.which("grep") or "/bin/grep")
        (bare / "python3").symlink_to(
            shutil.which("python3", path="/usr/bin:/bin") or os.path.realpath(sys.executable)
        )
    return str(bare)


@pytest.mark.integration  # the script runs as Claude Code runs it
@pytest.mark.parametrize("route", ["curl", "python"])
def test_a_file_url_prints_no_local_file_on_either_route(home: Path, route: str) -> None:
    """A server URL is a web server's: a ``file:`` one would have curl or urllib read a local
    JSON file into the session's context."""
    target = home / "srv" / "api" / "v1" / "hooks" / "claude-code"
    target.parent.mkdir(parents=True)
    target.write_text('{"secret": "read from the local disk"}', encoding="utf-8")
    path = without_curl(home) if route == "python" else None
    for url in (f"file://{target}#", f"FILE://{target}#", f"file://{home}/srv"):
        answer = run_hook(home, prompt(home), url, "t0ken", path=path)
        assert "read from the local disk" not in answer, url
        # Nothing, or the one line that says memory is off (never the file's content).
        assert answer == "" or "memory is off" in json.loads(answer)["systemMessage"], url


@pytest.mark.integration  # a listener of its own that answers one byte at a time
@pytest.mark.parametrize("route", ["curl", "python"])
def test_a_server_that_drips_its_answer_is_given_up_at_the_deadline(home: Path, route: str) -> None:
    """Both routes give the server TIMEOUT seconds for all of its answer: urllib's timeout is
    per read, so a byte every second would otherwise hold the session as long as it lasts."""
    import threading
    import time

    from .test_claude_plugin import memory_hook

    drip_seconds = 30.0
    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def drip() -> None:
        while not stop.is_set():
            try:
                connection, _ = listener.accept()
            except OSError:
                return
            with connection:
                connection.recv(65536)
                connection.sendall(
                    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"
                )
                began = time.monotonic()
                while not stop.is_set() and time.monotonic() - began < drip_seconds:
                    try:
                        connection.sendall(b" ")
                    except OSError:
                        break
                    stop.wait(1.0)

    thread = threading.Thread(target=drip, daemon=True)
    thread.start()
    path = without_curl(home) if route == "python" else None
    try:
        began = time.monotonic()
        answer = run_hook(
            home, prompt(home), f"http://127.0.0.1:{listener.getsockname()[1]}", "t0ken", path=path
        )
        took = time.monotonic() - began
    finally:
        stop.set()
        listener.close()
    # The dripped answer never reaches the session; the user is told memory is off.
    assert answer == "" or "memory is off" in json.loads(answer)["systemMessage"], answer
    # Well under the drip's length: the deadline, not the server, ended the hook.
    assert took < memory_hook.TIMEOUT + 5 < drip_seconds, took
