"""Claude Code's command hook for events its http hooks do not reach (SessionStart), and for
every event where the token comes from a file (``ccmem connect claude-code``).

    python -I -S hook_command.py URL [BUDGET_SECONDS [TOKEN_FILE [CA_FILE]]] < hook-input.json

Run by path, not as part of the package: the standard library only, nothing of the package
imported, so it starts in a few tens of milliseconds where the full CLI takes hundreds. It
posts the hook input from stdin to URL with ``Authorization: Bearer $CCMEM_TOKEN`` (else the
token in TOKEN_FILE, a 0600 file ``ccmem connect claude-code`` writes, so that a shell without
the variable still has memory) and prints the answer when it is a JSON object. CA_FILE: the
certificate(s) an https URL's server is checked against instead of the system's (a server's
self-signed certificate, pinned by ``ccmem connect``).

BUDGET_SECONDS is all the time the hook may take (a second under Claude Code's timeout for it);
one request waits at most :data:`REQUEST_TIMEOUT` of it. When the request fails, the plugin's
``memory_down.py`` (loaded by path from the package's copy of the plugin, only then) starts a
local server that refused the connection and sends the request again, or tells the user once a
session that memory is off and how to turn it on (docs/hooks.md). Whatever else goes wrong, it
prints nothing and exits 0: the session goes on without memories.

At SessionStart, once the server has answered, it also starts ``ccmem sync claude-code --cwd
CWD --quiet`` with the interpreter running it (the package's own: ``ccmem hooks install`` wrote
its path) in a session of its own, and does not wait: Claude Code's new or changed auto-memory
files of this project come in through consent while the session goes on (docs/import.md).
"""

import contextlib
import json
import os
import ssl
import subprocess
import sys
import time
import urllib.request

DEFAULT_TIMEOUT = 3.0
#: Seconds one request may take (a slow server costs the prompt this much, not the whole budget).
REQUEST_TIMEOUT = 4.0
#: The plugin's recovery script, in the package's copy of the plugin.
RECOVERY_SCRIPT = ("marketplace", "plugin", "scripts", "memory_down.py")


def stamped(url: str) -> str:
    """``url`` with ``now``: the time this hook ran, which is when the prompt was made (Claude
    Code's hook input carries no time); the server counts a prompt's "yesterday" back from it."""
    return url + ("&" if "?" in url else "?") + "now=" + time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


HOOK_PATH = "/api/v1/hooks/claude-code"


def start_sync(body: bytes, url: str, token: str | None) -> None:
    """SessionStart: Claude Code's auto-memory files of the session's folder taken in, in the
    background; the token goes by the environment, never the command line."""
    hook = json.loads(body or b"{}")
    cwd = (
        hook.get("cwd") if isinstance(hook, dict) and hook.get("hook_event_name") == "SessionStart" else None
    )
    if not isinstance(cwd, str) or not cwd:
        return
    base = url.split(HOOK_PATH)[0]
    command = [sys.executable, "-m", "claude_code_memory.cli", "sync", "claude-code"]
    environ = dict(os.environ, CCMEM_TOKEN=token) if token else dict(os.environ)
    # cwd "/": a config.yaml where the session runs is the project's, not ccmem's.
    subprocess.Popen(
        [*command, "--cwd", cwd, "--quiet", "--url", base],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        cwd="/",
        env=environ,
        start_new_session=True,
    )


def _token(argv: list[str]) -> str | None:
    token = os.environ.get("CCMEM_TOKEN")
    if not token and len(argv) > 3:
        try:
            with open(argv[3], encoding="utf-8") as stream:
                token = stream.read().strip()
        except OSError:
            return None  # the server refuses the request, and the user is told why
    return token or None


def _recovery() -> object:
    """memory_down.py, loaded by path (``-I`` puts no script directory on sys.path); imported
    here, so that a hook whose server answers pays nothing for it."""
    import importlib.util

    path = os.path.join(os.path.dirname(os.path.dirname(os.path.realpath(__file__))), *RECOVERY_SCRIPT)
    spec = importlib.util.spec_from_file_location("ccmem_memory_down", path)
    if spec is None or spec.loader is None:
        raise ImportError(path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        return 0
    started = time.monotonic()
    url = argv[1]
    try:
        budget = float(argv[2]) if len(argv) > 2 else DEFAULT_TIMEOUT
        body = sys.stdin.buffer.read()
        headers = {"Content-Type": "application/json"}
        token = _token(argv)
        if token:
            headers["Authorization"] = f"Bearer {token}"
        # No proxies: the server is on this machine, and a proxy would only add a hop.
        handlers: list[urllib.request.BaseHandler] = [urllib.request.ProxyHandler({})]
        if len(argv) > 4 and argv[4]:
            handlers.append(urllib.request.HTTPSHandler(context=ssl.create_default_context(cafile=argv[4])))
        opener = urllib.request.build_opener(*handlers)
    except Exception:  # noqa: BLE001 - a hook must never stand in the session's way
        return 0

    answered: list[bool] = []

    def ask(timeout: float) -> object:
        request = urllib.request.Request(stamped(url), data=body or b"{}", headers=headers, method="POST")
        with opener.open(request, timeout=timeout) as response:
            answer = json.loads(response.read())
        answered.append(True)
        return answer

    try:
        answer = ask(min(REQUEST_TIMEOUT, budget))
    except Exception as exc:  # noqa: BLE001 - a hook must never stand in the session's way
        try:
            down = _recovery()
            failure = down.failure_of(exc)  # type: ignore[attr-defined]
            answer = down.recover(os.environ, url, body, failure, ask, started + budget)  # type: ignore[attr-defined]
        except Exception:  # noqa: BLE001
            return 0
    if answered:  # also when the server answered only once started on demand
        with contextlib.suppress(Exception):  # the sync is a bonus; the answer still goes out
            start_sync(body, url, token)
    if isinstance(answer, dict) and answer:
        sys.stdout.write(json.dumps(answer))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
