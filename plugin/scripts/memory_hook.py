"""The claude-code-memory plugin's hooks and its status check; the standard library only.

    python3 -I -S memory_hook.py hook   < hook-input.json   (SessionStart, UserPromptSubmit, Stop)
    python3 -I -S memory_hook.py recover CURL_EXIT < hook-input.json   (memory_hook.sh's failures)
    python3 -I -S memory_hook.py status [SERVER_URL]        (the memory-status skill)
    python3 -I -S memory_hook.py sync CWD                    (SessionStart, in the background)

Claude Code runs ``hook`` as an exec-form command hook. It reads the plugin's options from the
environment Claude Code gives a plugin's command hooks, ``CLAUDE_PLUGIN_OPTION_SERVER_URL`` and
``CLAUDE_PLUGIN_OPTION_TOKEN`` (the token is a sensitive option: never on the command line, where
other users' ``ps`` would see it), posts the hook input to the server's hook endpoint and prints
the answer. The pinned Claude Code substitutes no option into an http hook's headers, hence a
command hook for every event (docs/plugin.md).

``sync`` starts the connected ccmem's ``sync claude-code --cwd CWD --quiet`` (the command
in ``connection.json``, which ``ccmem connect claude-code`` writes) in a session of its own and
does not wait: Claude Code's new or changed auto-memory files come in through consent. Without
a connected ccmem it does nothing.

It stands aside (prints nothing, calls nothing) when ``ccmem hooks install`` put our hooks into
one of Claude Code's settings files for this session: those hooks answer the prompt, and one
prompt is never served twice. When the request fails, ``memory_down.py`` beside it starts a local
server that refused the connection and sends the request again, or tells the user once a session
that memory is off and the command that fixes it; ``recover`` is that step for memory_hook.sh,
whose curl failed. Whatever else goes wrong it prints nothing and exits 0: the session goes on.
"""

import contextlib
import json
import os
import subprocess
import sys
import threading
import time
import urllib.request

HOOK_PATH = "/api/v1/hooks/claude-code"
DEFAULT_SERVER_URL = "http://127.0.0.1:8765"
#: Seconds for the server's answer, all of it (curl's -m in memory_hook.sh): a second under the
#: hook's timeout in hooks.json.
TIMEOUT = 4.0
#: The only schemes the server URL may have: any other (file:, ftp:, data:) would have urllib
#: read something that is not our server into the session's context.
WEB_SCHEMES = ("http://", "https://")
#: What marks a command hook of ``ccmem hooks install`` (client/hook_command.py).
SETTINGS_COMMAND_SCRIPT = "hook_command.py"
#: What starts a local server when no saved connection says otherwise (client/connection.py).
START_HINT = "ccmem up"


def saved_connection(environ):
    """``connection.json`` in ccmem's config directory (client/connection.py) as a dict; {} when
    there is none or it cannot be read."""
    home = environ.get("HOME") or os.path.expanduser("~")
    config = environ.get("XDG_CONFIG_HOME", "")
    config = config if os.path.isabs(config) else os.path.join(home, ".config")
    try:
        with open(os.path.join(config, "ccmem", "connection.json"), encoding="utf-8") as stream:
            saved = json.load(stream)
    except (OSError, ValueError):
        return {}
    return saved if isinstance(saved, dict) else {}


def when_down(environ, url):
    """What to do when the server at ``url`` does not answer: the connection ``ccmem connect``
    saved says how its server starts (client/connection.py's when_down, read with json here)."""
    saved = saved_connection(environ)
    if saved and str(saved.get("url", "")).rstrip("/").lower() == url.rstrip("/").lower():
        if not saved.get("start") and not saved.get("config"):
            return f"the server at {url} runs on another machine: nothing here starts it"
        return f"start it with `{saved.get('start_hint') or START_HINT}`"
    return f"start it with `{START_HINT}`"


#: All the time a hook may take, start on demand included: a second under hooks.json's timeout.
BUDGETS = {"SessionStart": 14.0}
DEFAULT_BUDGET = 9.0
#: What memory_hook.sh spent before ``recover`` runs (a shell, a refused curl).
SHELL_SECONDS = 0.5
#: curl's exit codes memory_hook.sh hands over: nothing listens, no answer in time.
CURL_REFUSED, CURL_TIMEOUT = "7", "28"


def server_url(environ):
    return (environ.get("CLAUDE_PLUGIN_OPTION_SERVER_URL") or DEFAULT_SERVER_URL).rstrip("/")


def is_settings_hook(hook):
    """A hook ``ccmem hooks install`` wrote (the rule of client/claude_settings.py's is_ours)."""
    if not isinstance(hook, dict):
        return False
    if hook.get("type") == "http":
        return str(hook.get("url", "")).rstrip("/").endswith(HOOK_PATH)
    if hook.get("type") == "command":
        command = str(hook.get("command", ""))
        return SETTINGS_COMMAND_SCRIPT in command and HOOK_PATH in command
    return False


def settings_files(environ, cwd):
    """Claude Code's settings files for a session in ``cwd``: user, project, local."""
    home = environ.get("HOME") or os.path.expanduser("~")
    project = environ.get("CLAUDE_PROJECT_DIR") or cwd
    files = [os.path.join(home, ".claude", "settings.json")]
    if project:
        files += [
            os.path.join(project, ".claude", "settings.json"),
            os.path.join(project, ".claude", "settings.local.json"),
        ]
    return files


def settings_hooks_in(path):
    """The events for which the settings file at ``path`` holds a hook of ``ccmem hooks install``."""
    try:
        with open(path, encoding="utf-8") as file:
            document = json.load(file)
    except (OSError, ValueError):
        return []
    hooks = document.get("hooks") if isinstance(document, dict) else None
    found = []
    for event, groups in hooks.items() if isinstance(hooks, dict) else []:
        for group in groups if isinstance(groups, list) else []:
            entries = group.get("hooks") if isinstance(group, dict) else None
            if any(is_settings_hook(hook) for hook in (entries if isinstance(entries, list) else [])):
                found.append(event)
    return found


def settings_hooks(environ, cwd):
    """{settings file: [events]} for every file holding hooks of ``ccmem hooks install``."""
    found = {}
    for path in settings_files(environ, cwd):
        events = settings_hooks_in(path)
        if events:
            found[path] = events
    return found


def is_web_url(url):
    return url.lower().startswith(WEB_SCHEMES)


def post(url, body, token, timeout):
    """The server's JSON answer to ``body``, all of it within ``timeout`` seconds (TimeoutError
    after that, however slowly the server sends it: urllib's timeout is per read)."""
    if not is_web_url(url):
        raise ValueError("the server URL must be http:// or https://")
    outcome = {}

    def call():
        try:
            outcome["answer"] = _post(url, body, token, timeout)
        except Exception as exc:  # noqa: BLE001 - raised again in the caller's thread
            outcome["error"] = exc

    # A daemon thread: one still reading when the process exits is dropped with it.
    worker = threading.Thread(target=call, daemon=True)
    worker.start()
    worker.join(timeout)
    if worker.is_alive():
        raise TimeoutError(f"no full answer from the server in {timeout:g} s")
    if "error" in outcome:
        raise outcome["error"]
    return outcome["answer"]


def _post(url, body, token, timeout):
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = "Bearer " + token
    # No proxies: the server is normally on this machine, and a proxy would only add a hop.
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    request = urllib.request.Request(url, data=body or b"{}", headers=headers, method="POST")
    with opener.open(request, timeout=timeout) as response:
        return json.loads(response.read())


def stamped(url):
    """``url`` with ``now``: the time this hook ran, which is when the prompt was made (Claude
    Code's hook input carries no time); the server counts a prompt's "yesterday" back from it."""
    return url + ("&" if "?" in url else "?") + "now=" + time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _event(body):
    try:
        document = json.loads(body) if body.strip() else {}
    except ValueError:
        return {}
    return document if isinstance(document, dict) else {}


def _recovery():
    """memory_down.py beside this file, loaded by path (``-I`` puts no script directory on
    sys.path); only after a failed request."""
    import importlib.util

    path = os.path.join(os.path.dirname(os.path.realpath(__file__)), "memory_down.py")
    spec = importlib.util.spec_from_file_location("ccmem_memory_down", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def hook(environ, body, failure=None, started=None):
    """Answer one hook (``body``: its input, as bytes): the server's JSON object, or what
    memory_down.py answers when the server cannot be reached, or nothing. ``failure``: the
    request already failed so (memory_hook.sh's curl), in memory_down.failure_of's terms."""
    started = time.monotonic() if started is None else started
    document = _event(body)
    if settings_hooks(environ, document.get("cwd") or os.getcwd()):
        return None
    url = server_url(environ) + HOOK_PATH
    deadline = started + BUDGETS.get(document.get("hook_event_name"), DEFAULT_BUDGET)

    answered = []

    def ask(timeout):
        answer = post(stamped(url), body, environ.get("CLAUDE_PLUGIN_OPTION_TOKEN"), timeout)
        answered.append(True)
        return answer if isinstance(answer, dict) and answer else None

    def answer_and_sync(answer):
        # Also when the server answered only once started on demand: the first session after a
        # reboot takes Claude Code's auto-memory in as every other one does.
        if answered and document.get("hook_event_name") == "SessionStart":
            with contextlib.suppress(Exception):  # the sync is a bonus; the answer still goes out
                start_sync(environ, document.get("cwd") or os.getcwd())
        return answer

    down = None
    if failure is None:
        try:
            return answer_and_sync(ask(min(TIMEOUT, deadline - time.monotonic())))
        except Exception as exc:  # noqa: BLE001 - recovered or told below
            down = _recovery()
            failure = down.failure_of(exc)
    down = down or _recovery()
    return answer_and_sync(down.recover(environ, url, body, failure, ask, deadline))


def recover(environ, body, curl_exit):
    """memory_hook.sh's curl failed with ``curl_exit`` ("token": a token no header can carry)."""
    started = time.monotonic() - SHELL_SECONDS
    failure = {
        CURL_REFUSED: ("unreachable", True, None),
        CURL_TIMEOUT: ("unreachable", False, None),
        "token": ("token", False, None),
    }.get(curl_exit)
    # Any other exit (an HTTP error status, no such host): asked again, to say what it was.
    return hook(environ, body, failure, started)


def status(environ, url):
    """Lines for the memory-status skill: the server, and which hooks serve this session."""
    base = (url or server_url(environ)).rstrip("/")
    lines = []
    try:
        if not is_web_url(base):
            raise ValueError("not an http:// or https:// URL")
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        with opener.open(base + "/health", timeout=TIMEOUT) as response:
            health = json.loads(response.read())
        state = health.get("status", "answers") if isinstance(health, dict) else "answers"
        lines.append(f"server {base}: {state}")
    except Exception as exc:  # noqa: BLE001 - reported, not raised
        lines.append(f"server {base}: not reachable ({exc.__class__.__name__}); {when_down(environ, base)}")
    found = settings_hooks(environ, os.getcwd())
    if found:
        for path, events in found.items():
            lines.append(
                f"hooks of `ccmem hooks install` in {path} ({', '.join(events)}): they serve the session "
                "and the plugin's hooks stand aside; `ccmem hooks uninstall` hands over to the plugin"
            )
    else:
        lines.append("hooks: the plugin's (SessionStart briefing, recall with each prompt, capture at Stop)")
    return lines


def sync_command(environ):
    """The connected ccmem's auto-memory sync (argv), from ``connection.json`` in ccmem's config
    directory: its ``sync``, else the ccmem of its ``start``; None without one."""
    connection = saved_connection(environ)
    command = connection.get("sync")
    if isinstance(command, list) and command and all(isinstance(part, str) for part in command):
        return command
    start = connection.get("start")
    if isinstance(start, list) and start and os.path.basename(str(start[0])).startswith("ccmem"):
        return [str(start[0]), "sync", "claude-code"]
    return None


def start_sync(environ, cwd):
    """Start the sync for a session in ``cwd`` in the background (the token by the environment)."""
    command = sync_command(environ)
    if not command or not cwd:
        return
    child = dict(environ)
    if environ.get("CLAUDE_PLUGIN_OPTION_TOKEN"):
        child["CCMEM_TOKEN"] = environ["CLAUDE_PLUGIN_OPTION_TOKEN"]
    subprocess.Popen(
        [*command, "--cwd", cwd, "--quiet", "--url", server_url(environ)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        cwd="/",
        env=child,
        start_new_session=True,
    )


def main(argv, environ, stdin, stdout):
    command = argv[1] if len(argv) > 1 else "hook"
    if command == "sync":
        with contextlib.suppress(Exception):  # a hook must never stand in the session's way
            start_sync(environ, argv[2] if len(argv) > 2 else None)
        return 0
    if command == "status":
        stdout.write("\n".join(status(environ, argv[2] if len(argv) > 2 else None)) + "\n")
        return 0
    try:
        if command == "recover":
            answer = recover(environ, stdin.buffer.read(), argv[2] if len(argv) > 2 else "")
        else:
            answer = hook(environ, stdin.buffer.read())
    except Exception:  # noqa: BLE001 - a hook must never stand in the session's way
        return 0
    if answer:
        stdout.write(json.dumps(answer))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv, os.environ, sys.stdin, sys.stdout))
