"""Claude Code's hooks, answered: one hook input (a JSON object) to one hook output.

    ClaudeCodeHooks(...).handle(user_id, hook_input) -> {} or
        {"hookSpecificOutput": {"hookEventName": ..., "additionalContext": ...}}

- ``SessionStart``: a briefing for the session's project (:meth:`.context.Recall.briefing`)
  of memories the session was not given yet. A ``clear`` or ``compact`` start first forgets
  what the session was given: that context is gone, so the same memories may be given again.
  A ``resume`` start keeps it (read back from the access log after a server restart): the
  resumed transcript still holds them.
- ``UserPromptSubmit``: the memories that bear on the prompt (:meth:`.context.Recall.for_prompt`);
  the prompt is kept for the Stop that ends its turn.
- ``Stop``: the turn (the kept prompt and ``last_assistant_message``) is captured through the
  same write path, policy gate and consent queue as ``POST /api/v1/capture``, as the text the
  capture proxy would store for it (:func:`turn_text`), so a turn both see is stored once.
- ``SubagentStop``: answers ``{}`` and leaves the kept prompt for the main turn's Stop. A
  subagent's prompt is written by the model, not the user, and what it found comes back to the
  main agent as a tool result that the main reply (captured at Stop) digests; storing it too
  would fill the consent queue with intermediate work.
- ``SessionEnd``: the session's state is dropped. Nothing else: every turn was captured at
  its Stop, and a session's end says nothing worth remembering.
- Anything else (``PostCompact`` included: its summary is the model's retelling of turns
  already captured, and SessionStart ``compact`` re-briefs the compacted context) answers ``{}``.

The project is read from the hook's path strings alone
(:func:`...capture.projects.session_project`): the server never looks at its own disk for a
path a client sent. Any failure inside answers ``{}`` and is logged:
a hook must never stand in Claude Code's way.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any

from ...capture.projects import MAX_CWD, session_project
from ...capture.projects import MAX_PROJECT as MAX_PROJECT  # the hook route's limit too
from ...errors import MemoryStackError
from .context import HOOK_APP, Recall

log = logging.getLogger(__name__)

ROLE_LABELS = {"user": "User", "assistant": "Assistant"}
#: Longest ids and names kept from a hook input (the columns' sizes).
MAX_SESSION_ID = 128
MAX_MODEL = 128
#: ``metadata.source`` of a turn captured at Stop (the proxy captures under the same app).
CAPTURE_SOURCE = "claude-code-hook"
#: Events whose output can carry ``additionalContext``.
CONTEXT_EVENTS = ("SessionStart", "UserPromptSubmit")
#: How ``Recall.briefing`` is asked for (``source`` values that empty the context).
RESET_SOURCES = ("clear", "compact")
RESUME_SOURCE = "resume"


def turn_text(messages: Iterable[tuple[str, str]]) -> str:
    """A captured turn as stored: ``User: …`` and ``Assistant: …`` paragraphs ((role, text)
    pairs; empty texts left out). ``POST /api/v1/capture`` stores turns the same way."""
    return "\n\n".join(f"{ROLE_LABELS[role]}: {text.strip()}" for role, text in messages if text.strip())


def context_output(event: str, context: str) -> dict[str, Any]:
    """The output Claude Code reads ``additionalContext`` from (a top-level one is ignored)."""
    if not context:
        return {}
    return {"hookSpecificOutput": {"hookEventName": event, "additionalContext": context}}


def _text(value: Any, limit: int | None = None) -> str:
    text = value if isinstance(value, str) else ""
    return text[:limit] if limit else text


class ClaudeCodeHooks:
    def __init__(
        self, recall: Recall, add_memory: Callable[..., list[dict[str, Any]]], *, capture: bool
    ) -> None:
        self.recall = recall
        self.sessions = recall.sessions
        self.add_memory = add_memory
        self.capture = capture

    def handle(self, user_id: str, hook_input: Any, now: datetime | None = None) -> dict[str, Any]:
        """The output for one hook input; ``{}`` when there is nothing to add or anything fails.
        ``now``: when the prompt was made (naive UTC); a prompt's relative dates count back from
        it (None: from the newest memory, as a search without ``now``)."""
        try:
            if not isinstance(hook_input, dict):
                return {}
            return self._dispatch(user_id, hook_input, now)
        except MemoryStackError as exc:
            log.warning(
                "hook %s for %s answered nothing: %s", hook_input.get("hook_event_name"), user_id, exc
            )
        except Exception:
            log.exception("hook %s for %s failed", hook_input.get("hook_event_name"), user_id)
        return {}

    def _dispatch(self, user_id: str, hook: dict[str, Any], now: datetime | None) -> dict[str, Any]:
        event = _text(hook.get("hook_event_name"))
        session_id = _text(hook.get("session_id"), MAX_SESSION_ID)
        cwd = _text(hook.get("cwd"))
        if len(cwd) > MAX_CWD:
            log.warning("hook %s: a cwd of %d characters names no project", event[:64], len(cwd))
        project = session_project(cwd, _text(hook.get("transcript_path"), MAX_CWD))
        if event == "SessionStart":
            if hook.get("source") in RESET_SOURCES:
                self.sessions.forget_injected(user_id, session_id)
            model = _text(hook.get("model"), MAX_MODEL)
            if model:
                self.sessions.set_model(user_id, session_id, model)
            resume = hook.get("source") == RESUME_SOURCE
            briefing = self.recall.briefing(user_id, session_id=session_id, project=project, resume=resume)
            return context_output(event, briefing)
        if event == "UserPromptSubmit":
            prompt = _text(hook.get("prompt"))
            self.sessions.keep_prompt(user_id, session_id, prompt)
            block = self.recall.for_prompt(
                user_id, session_id=session_id, project=project, prompt=prompt, now=now
            )
            return context_output(event, block)
        if event == "Stop":
            self.capture_turn(user_id, hook, session_id=session_id, project=project)
            return {}
        if event == "SubagentStop":
            return {}  # not captured, and the main turn's prompt stays kept (module docstring)
        if event == "SessionEnd":
            self.sessions.end(user_id, session_id)
        return {}

    def capture_turn(
        self, user_id: str, hook: dict[str, Any], *, session_id: str, project: str | None
    ) -> dict[str, Any] | None:
        """The finished turn into the write path on the ``capture`` channel (pending while
        consent is on); None when capture is off or the prompt or reply is missing."""
        prompt = self.sessions.take_prompt(user_id, session_id)
        reply = _text(hook.get("last_assistant_message"))
        if not self.capture or not prompt or not prompt.strip() or not reply.strip():
            return None
        results = self.add_memory(
            user_id=user_id,
            app_name=HOOK_APP,
            text=turn_text([("user", prompt), ("assistant", reply)]),
            metadata={"source": CAPTURE_SOURCE},
            channel="capture",
            project=project,
            conversation_id=session_id or None,
            model=self.sessions.model(user_id, session_id) or _text(hook.get("model"), MAX_MODEL) or None,
        )
        return results[0] if results else None
