"""Our hooks in a Claude Code ``settings.json``: added, found and removed without touching the rest.

    with_hooks(document, entries) -> document     (idempotent: ours replaced, others kept)
    without_hooks(document) -> document
    installed(document) -> {event: entry}

A hook is ours when it is an http hook whose URL ends in :data:`HOOK_PATH`, or a command hook
that runs :data:`COMMAND_SCRIPT`. Everything else (other tools' hooks, other keys, their order)
is left as it was; a matcher group that held only our hook goes with it, and so does a
``hooks`` object left empty. :func:`dump` writes in the file's own indentation, so a file
Claude Code wrote comes back byte for byte after install and uninstall.
"""

from __future__ import annotations

import copy
import json
import re
import shlex
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..config import TOKEN_ENV

HOOK_PATH = "/api/v1/hooks/claude-code"
COMMAND_SCRIPT = "hook_command.py"
#: Events an http hook reaches in the pinned Claude Code; SessionStart needs a command hook.
HTTP_EVENTS = ("UserPromptSubmit", "Stop", "SubagentStop", "SessionEnd", "PostCompact")
COMMAND_EVENTS = ("SessionStart",)
DEFAULT_EVENTS = ("SessionStart", "UserPromptSubmit", "Stop")
ALL_EVENTS = COMMAND_EVENTS + HTTP_EVENTS
#: Seconds Claude Code waits for an http hook.
HOOK_TIMEOUT = 5
#: Seconds Claude Code waits for a command hook, which may start the local server on demand and
#: ask again (docs/hooks.md); the hook's own budget is a second less. A request still waits at
#: most hook_command.REQUEST_TIMEOUT: a server that answers slowly costs no more than before.
COMMAND_TIMEOUTS = {"SessionStart": 15}
COMMAND_TIMEOUT = 10


def command_timeout(event: str) -> int:
    return COMMAND_TIMEOUTS.get(event, COMMAND_TIMEOUT)


def script_path() -> Path:
    return Path(__file__).resolve().parent / COMMAND_SCRIPT


def hook_entry(
    event: str,
    base_url: str,
    python: str | None = None,
    token_file: Path | None = None,
    ca_file: Path | None = None,
) -> dict[str, Any]:
    """Our hook for ``event``: the token comes from ``$CCMEM_TOKEN`` when the hook runs, else
    (with ``token_file``: a command hook for every event) from that file; ``ca_file`` (with
    ``token_file``): the certificate an https server is checked against."""
    url = base_url.rstrip("/") + HOOK_PATH
    if event not in ALL_EVENTS:
        raise ValueError(f"unknown hook event {event!r}: choose from {', '.join(ALL_EVENTS)}")
    if event in COMMAND_EVENTS or token_file is not None:
        interpreter = python or sys.executable
        timeout = command_timeout(event)
        parts = [interpreter, "-I", "-S", str(script_path()), url, str(timeout - 1)]
        # The file's path, never the token itself: a command line is visible to every user.
        parts += [str(token_file)] if token_file is not None else []
        parts += [str(ca_file)] if token_file is not None and ca_file is not None else []
        command = " ".join(shlex.quote(part) for part in parts)
        return {"type": "command", "command": command, "timeout": timeout}
    return {
        "type": "http",
        "url": url,
        "headers": {"Authorization": f"Bearer ${TOKEN_ENV}"},
        "allowedEnvVars": [TOKEN_ENV],
        "timeout": HOOK_TIMEOUT,
    }


def is_ours(hook: Any) -> bool:
    if not isinstance(hook, Mapping):
        return False
    if hook.get("type") == "http":
        return str(hook.get("url", "")).rstrip("/").endswith(HOOK_PATH)
    if hook.get("type") == "command":
        return COMMAND_SCRIPT in str(hook.get("command", "")) and HOOK_PATH in str(hook.get("command", ""))
    return False


def installed(document: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Our hook per event in a settings document."""
    found: dict[str, dict[str, Any]] = {}
    hooks = document.get("hooks")
    for event, groups in hooks.items() if isinstance(hooks, Mapping) else []:
        for group in groups if isinstance(groups, list) else []:
            for hook in group.get("hooks", []) if isinstance(group, Mapping) else []:
                if is_ours(hook):
                    found[event] = hook
    return found


def without_hooks(document: Mapping[str, Any]) -> dict[str, Any]:
    result = copy.deepcopy(dict(document))
    hooks = result.get("hooks")
    if not isinstance(hooks, dict):
        return result
    for event in list(hooks):
        groups = hooks[event]
        if not isinstance(groups, list):
            continue
        kept = []
        for group in groups:
            if isinstance(group, dict) and isinstance(group.get("hooks"), list):
                theirs = [hook for hook in group["hooks"] if not is_ours(hook)]
                if not theirs and group["hooks"]:
                    continue  # the group held only ours
                group["hooks"] = theirs
            kept.append(group)
        if kept or not groups:
            hooks[event] = kept
        else:
            del hooks[event]
    if not hooks:
        del result["hooks"]
    return result


def with_hooks(document: Mapping[str, Any], entries: Mapping[str, dict[str, Any]]) -> dict[str, Any]:
    """The document with exactly ``entries`` as our hooks (one matcher group each, last)."""
    result = without_hooks(document)
    if not entries:
        return result
    hooks = result.setdefault("hooks", {})
    for event, entry in entries.items():
        hooks.setdefault(event, []).append({"hooks": [entry]})
    return result


def load(path: Path) -> tuple[dict[str, Any], str | None]:
    """The document and its text (None when the file does not exist)."""
    if not path.exists():
        return {}, None
    text = path.read_text(encoding="utf-8")
    if not text.strip():
        return {}, text
    try:
        document = json.loads(text)
    except ValueError as exc:
        raise ValueError(f"{path} is not valid JSON ({exc}); fix it first, nothing was changed") from exc
    if not isinstance(document, dict):
        raise ValueError(f"{path} does not hold a JSON object; nothing was changed")
    return document, text


def dump(document: Mapping[str, Any], like: str | None) -> str:
    """JSON in the indentation (and final newline) of ``like``, the file's current text."""
    indent: int | str = 2
    if like:
        found = re.search(r"\n([ \t]+)\S", like)
        if found:
            unit = found.group(1)
            indent = unit if "\t" in unit else len(unit)
    text = json.dumps(document, indent=indent, ensure_ascii=False)
    newline = "\n" if like is None or like.endswith("\n") else ""
    return text + newline
