"""What a hook does when it cannot reach memory: start the local server on demand, or tell the user.

    recover(environ, url, body, failure, retry, deadline) -> the JSON object to print, or None

The standard library only, loaded by path after a hook's request has failed (a hook whose server
answers never reads this file): by the plugin's ``memory_hook.py`` beside it, and by the settings
hooks' ``claude_code_memory/client/hook_command.py`` through the package's copy of the plugin.

1. The server refused the connection and ``connection.json`` (the per-user config directory,
   written by ``ccmem connect claude-code``) names the same server with a ``start`` command: the
   hook runs that command detached (its own session, output appended to ``logs/autostart.log``
   in the per-user state directory, run in the directory of the connection's config file),
   waits for ``/health`` and sends the request again, all within the hook's time budget.
   ``start`` is a starter that is safe to run twice at once (``ccmem up`` takes the stack's
   start lock); a lock of its own (``run/autostart.lock``) keeps parallel hooks from running it
   more than once: the others only wait for ``/health``. An empty ``start`` (a remote server)
   or ``CCMEM_AUTOSTART=0`` in Claude Code's environment: nothing is started.
2. Otherwise, or when the server still does not answer: the user is told, once a session (a
   marker per ``session_id`` under ``hooks/`` in the state directory), in one line that says
   memory is off and the command that fixes it. The line goes out as the hook answer's
   ``systemMessage`` (interactive Claude Code shows it in the terminal, stream-json as an event)
   and, when Claude Code runs without its terminal UI (``claude -p``: it prints no hook message),
   straight to Claude Code's own standard error (docs/hooks.md, "What a hook can show").
"""

import errno
import fcntl
import json
import os
import re
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request

PRODUCT = "claude-code-memory"
DEFAULT_HINT = "ccmem up"
TOKEN_HINT = "ccmem connect claude-code"
ERROR_HINT = "ccmem doctor"
#: In Claude Code's environment (e.g. settings.json "env"): "0" keeps hooks from starting a server.
AUTOSTART_ENV = "CCMEM_AUTOSTART"
OFF = ("0", "false", "no", "off")
#: Seconds kept back from the budget for the request sent again once the server answers.
RESERVE_SECONDS = 1.5
HEALTH_POLL_SECONDS = 0.05
#: Markers of sessions already told are removed after this long.
MARKER_DAYS = 3
#: Held by the hook that starts the server while it waits; left by the kernel when it exits.
_held_locks: list = []


# -- where ------------------------------------------------------------------------------------
def _xdg(environ, variable, default):
    home = environ.get("HOME") or os.path.expanduser("~")
    value = environ.get(variable, "")
    return os.path.join(value if os.path.isabs(value) else os.path.join(home, default), "ccmem")


def config_dir(environ):
    """``$XDG_CONFIG_HOME/ccmem`` (the rule of claude_code_memory/config/locations.py)."""
    return _xdg(environ, "XDG_CONFIG_HOME", ".config")


def state_dir(environ):
    """``$XDG_STATE_HOME/ccmem``: the start log, the start lock and the session markers."""
    return _xdg(environ, "XDG_STATE_HOME", ".local/state")


def _private_dir(path):
    os.makedirs(path, mode=0o700, exist_ok=True)
    return path


def base_of(url):
    """``scheme://host:port`` of a URL, lower-cased: what two URLs of one server share."""
    parts = urllib.parse.urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}".lower()


# -- what went wrong ----------------------------------------------------------------------------
def failure_of(exc):
    """``(kind, refused, status)``: kind "unreachable" (no answer: refused, timed out, no such
    host), "token" (401/403) or "error" (any other status, or an answer that is not JSON)."""
    if isinstance(exc, urllib.error.HTTPError):
        return ("token" if exc.code in (401, 403) else "error", False, exc.code)
    if isinstance(exc, ValueError):
        # The plugin's own URL check (memory_hook.py) says "http:// or https://" when it refuses.
        return ("url" if "http:// or https://" in str(exc) else "error", False, None)
    reason = getattr(exc, "reason", exc)
    refused = (
        isinstance(reason, ConnectionRefusedError) or getattr(reason, "errno", None) == errno.ECONNREFUSED
    )
    return ("unreachable", refused, None)


def load_connection(environ):
    """connection.json as a dict; {} when there is none or it cannot be read."""
    try:
        with open(os.path.join(config_dir(environ), "connection.json"), encoding="utf-8") as stream:
            document = json.load(stream)
    except (OSError, ValueError):
        return {}
    return document if isinstance(document, dict) else {}


def serves(connection, base):
    """The connection is the one for the server at ``base``."""
    return bool(connection.get("url")) and base_of(str(connection["url"])) == base


def start_command(connection, base, environ):
    """The argv that starts the server at ``base``, or None: not ours to start."""
    argv = connection.get("start")
    if str(environ.get(AUTOSTART_ENV, "")).strip().lower() in OFF or not serves(connection, base):
        return None
    if not isinstance(argv, list) or not argv or not all(isinstance(part, str) and part for part in argv):
        return None
    return argv


# -- starting ---------------------------------------------------------------------------------
def _server_env(environ):
    """The hook's environment without Claude Code's own variables (the session's ids, the
    plugin's options, the token among them): the server outlives the session."""
    return {key: value for key, value in environ.items() if not key.startswith(("CLAUDE", "AI_AGENT"))}


def start_directory(connection, environ):
    """Where ``start`` runs: the directory of the installation's config file (a checkout's
    relative paths are read from there), else the state directory; never the project, whose
    own config.yaml is not the user's."""
    config = connection.get("config")
    if isinstance(config, str) and config and os.path.isdir(os.path.dirname(config)):
        return os.path.dirname(config)
    return _private_dir(state_dir(environ))


def start(argv, environ, cwd):
    """Run ``argv`` in ``cwd``, detached, unless another hook is doing so: ``(the log's path,
    the process or None)``. OSError when it cannot be run at all."""
    state = _private_dir(state_dir(environ))
    log_path = os.path.join(_private_dir(os.path.join(state, "logs")), "autostart.log")
    lock = os.open(
        os.path.join(_private_dir(os.path.join(state, "run")), "autostart.lock"),
        os.O_RDWR | os.O_CREAT | os.O_CLOEXEC,
        0o600,
    )
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(lock)
        return log_path, None  # another hook starts it: this one only waits for /health
    _held_locks.append(lock)
    with open(log_path, "ab") as log:
        os.chmod(log_path, 0o600)
        log.write(f"=== {time.strftime('%Y-%m-%d %H:%M:%S')} a hook starts: {' '.join(argv)}\n".encode())
        log.flush()
        # Its own session, its output in the log and not on the hook's pipes (Claude Code waits
        # for those to close).
        process = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=cwd,
            env=_server_env(environ),
            start_new_session=True,
            close_fds=True,
        )
    return log_path, process


def healthy(base, timeout=0.5):
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(base + "/health", timeout=timeout) as response:
            return response.status == 200
    except Exception:  # noqa: BLE001 - not yet
        return False


def wait_healthy(base, until, process=None):
    """True once ``/health`` answers; False at ``until``, or as soon as ``process`` (the starter)
    has failed: a starter that exits 0 found the stack running already, so that one is waited for."""
    while True:
        if healthy(base, timeout=max(0.1, min(0.5, until - time.monotonic()))):
            return True
        if process is not None and process.poll() not in (None, 0):
            return False
        if time.monotonic() + HEALTH_POLL_SECONDS >= until:
            return False
        time.sleep(HEALTH_POLL_SECONDS)


# -- telling ----------------------------------------------------------------------------------
def message(kind, base, status, hint, log_path):
    said = f"{PRODUCT}: memory is off,"
    if kind == "token":
        return f"{said} the server at {base} refused this session's token; run `{TOKEN_HINT}`"
    if kind == "url":
        return f"{said} its server URL {base} is not http:// or https://; run `ccmem plugin install`"
    if kind == "error":
        answered = f"answered HTTP {status}" if status else "gave an answer that is not JSON"
        return f"{said} the server at {base} {answered}; run `{ERROR_HINT}`"
    if kind == "start failed":
        where = f" (log: {log_path})" if log_path else ""
        return f"{said} starting the server at {base} failed{where}; run `{hint}`"
    if kind == "starting":
        late = f"is starting but did not answer in time (log: {log_path})"
        return f"{said} the server at {base} {late}; run `{hint}`"
    return f"{said} the server at {base} does not answer; start it with `{hint}`"


def hook_input(body):
    try:
        document = json.loads(body) if body and body.strip() else {}
    except ValueError:
        return {}
    return document if isinstance(document, dict) else {}


def first_time(environ, session_id):
    """True once for each session (a marker file made with O_EXCL: parallel hooks agree)."""
    name = re.sub(r"[^A-Za-z0-9_-]", "", str(session_id or ""))[:80]
    if not name:
        return True
    try:
        markers = _private_dir(os.path.join(state_dir(environ), "hooks"))
        os.close(os.open(os.path.join(markers, f"told-{name}"), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except FileExistsError:
        return False
    except OSError:
        return True  # better told twice than never
    _prune(markers)
    return True


def _prune(markers):
    old = time.time() - MARKER_DAYS * 86400
    try:
        for entry in os.scandir(markers):
            if entry.name.startswith("told-") and entry.stat().st_mtime < old:
                os.unlink(entry.path)
    except OSError:
        pass


def tell_terminal(environ, line):
    """Outside the terminal UI (``claude -p``, the SDKs) Claude Code prints no hook message: the
    line goes to Claude Code's own standard error (Linux's /proc; elsewhere the answer's
    ``systemMessage`` is all there is)."""
    if environ.get("CLAUDE_CODE_ENTRYPOINT", "cli") == "cli":
        return
    pid = environ.get("CLAUDE_PID", "")
    if not pid.isdigit():
        return
    try:
        with open(f"/proc/{pid}/fd/2", "a", encoding="utf-8") as stream:
            stream.write(line + "\n")
    except OSError:
        pass


def notice(environ, body, line):
    """The answer that tells the user (and the model) ``line``; None when this session was told."""
    document = hook_input(body)
    if not first_time(environ, document.get("session_id")):
        return None
    tell_terminal(environ, line)
    answer = {"systemMessage": line}
    event = document.get("hook_event_name")
    if event in ("SessionStart", "UserPromptSubmit"):
        answer["hookSpecificOutput"] = {
            "hookEventName": event,
            "additionalContext": f"{line}. No memories are recalled or saved until it is fixed.",
        }
    return answer


# -- the whole --------------------------------------------------------------------------------
def recover(environ, url, body, failure, retry, deadline):
    """After a failed request to ``url`` (the hook endpoint): start the server and send the
    request again (``retry(timeout)`` returns its answer or raises), or tell the user."""
    base = base_of(url)
    kind, refused, status = failure
    connection = load_connection(environ)
    hint = str(connection.get("start_hint") or DEFAULT_HINT) if serves(connection, base) else DEFAULT_HINT
    log_path = None
    argv = start_command(connection, base, environ) if kind == "unreachable" and refused else None
    if argv is not None:
        try:
            log_path, process = start(argv, environ, start_directory(connection, environ))
        except OSError:
            log_path, process, kind = None, None, "start failed"  # its command is gone
        if kind != "start failed":
            if wait_healthy(base, deadline - RESERVE_SECONDS, process):
                try:
                    return retry(max(0.5, deadline - time.monotonic() - 0.2))
                except Exception as exc:  # noqa: BLE001 - told below
                    kind, _, status = failure_of(exc)
            else:
                failed = process is not None and process.poll() not in (None, 0)
                kind = "start failed" if failed else "starting"
    return notice(environ, body, message(kind, base, status, hint, log_path))
