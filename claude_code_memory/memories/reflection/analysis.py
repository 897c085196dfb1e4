"""Reflection over a user's stored conversations: patterns across sessions, and what to do next.

    Reflection.analyze_conversations(user_id, since=None, project=None) -> dict
    Reflection.suggest_next_actions(user_id, project=None) -> dict

Both read the user's kept memories (active, paused, archived; never pending or deleted) and run
pure analysis over them (:func:`analyze`, :func:`next_actions`): recurring topics
(:mod:`.topics`), recurring and unresolved problems, decisions, files and commands, open
questions and to-dos (:mod:`.patterns`), and where the newest conversation stopped. A
conversation is the memories sharing a ``conversation_id`` (a Claude Code session); a memory
without one is a conversation of its own. Nothing leaves the machine unless
``reflection.llm`` names an OpenAI-compatible endpoint: then the findings (which quote memories)
are sent to it for a prose summary (:mod:`.llm_summary`), and the findings are returned either way.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import or_, select

from ...config import Settings
from ...db.database import Database
from ...db.models import Memory
from ...domain.memory_state import MemoryState
from ...errors import BadInput
from ...store.owners import Owners
from ..read_model.shapes import iso
from . import patterns, topics
from .llm_summary import Prose

KEPT_STATES = (MemoryState.active, MemoryState.paused, MemoryState.archived)
#: How many later parts of a conversation may carry the fix of a problem or the answer.
FOLLOW_UP = 6
TOP = 10
MANY = 20
LAST_TURNS = 3
_RELATIVE = re.compile(r"^\s*(\d{1,5})\s*([hdw])\s*$")
_UNIT = {"h": "hours", "d": "days", "w": "weeks"}


@dataclass(frozen=True)
class Note:
    """One stored memory as the analysis reads it."""

    id: str
    text: str
    conversation: str  # its conversation_id, or "memory:<id>" when it has none
    project: str | None
    at: datetime  # when it was said (captured_at), else when it was stored


def project_of(memory: Any) -> str | None:
    """A memory's project. Today: its provenance column (set from the hook's cwd, the capture
    proxy or the caller), else ``metadata.project``. The one place to change when projects
    become a scope of their own."""
    return memory.project or (memory.metadata_ or {}).get("project") or None


def _in_project(project: str) -> Any:
    """:func:`project_of` as a SQL condition."""
    return or_(Memory.project == project, Memory.metadata_["project"].as_string() == project)


def parse_since(value: str | None, now: datetime) -> datetime | None:
    """``7d``, ``24h``, ``2w`` (before ``now``), or an ISO date or time (UTC when naive)."""
    if value is None or not str(value).strip():
        return None
    relative = _RELATIVE.match(str(value))
    if relative:
        return now - timedelta(**{_UNIT[relative.group(2)]: int(relative.group(1))})
    try:
        moment = datetime.fromisoformat(str(value).strip().replace("Z", "+00:00"))
    except ValueError:
        raise BadInput(f"since must be like 7d, 24h, 2w or an ISO date, got {value!r}") from None
    return moment.astimezone(UTC).replace(tzinfo=None) if moment.tzinfo else moment


def _project(project: str | None) -> str | None:
    if project is None or not project.strip():
        return None
    if len(project) > 512:
        raise BadInput("project must be at most 512 characters")
    return project


# -- the analysis (pure) ---------------------------------------------------------------------
@dataclass(frozen=True)
class _Part:
    note: Note
    segment: patterns.Segment


def _conversations(notes: Sequence[Note]) -> dict[str, list[_Part]]:
    """Each conversation's parts (turns split into user and assistant) in the order said."""
    grouped: dict[str, list[_Part]] = defaultdict(list)
    for note in notes:  # already oldest first
        grouped[note.conversation].extend(_Part(note, s) for s in patterns.segments(note.text))
    return grouped


def _ref(note: Note) -> dict[str, Any]:
    return {
        "memory_id": note.id,
        "conversation_id": None if note.conversation.startswith("memory:") else note.conversation,
        "project": note.project,
        "at": iso(note.at),
    }


def _problems(conversations: dict[str, list[_Part]]) -> list[dict[str, Any]]:
    seen: dict[str, dict[str, Any]] = {}
    for parts in conversations.values():
        for index, part in enumerate(parts):
            later = parts[index + 1 : index + 1 + FOLLOW_UP]
            for problem in patterns.problems(part.segment.text):
                fixed = patterns.resolved_after(part.segment.text, problem.end) or any(
                    patterns.resolved_after(p.segment.text) for p in later
                )
                entry = seen.setdefault(
                    problem.key,
                    {
                        "problem": problem.text,
                        "key": problem.key,
                        "occurrences": 0,
                        "_convs": set(),
                        "_refs": [],
                    },
                )
                entry["occurrences"] += 1
                entry["_convs"].add(part.note.conversation)
                entry["_refs"].append((part.note, fixed))
    found = []
    for entry in seen.values():
        refs = sorted(entry.pop("_refs"), key=lambda r: (r[0].at, r[0].id))
        conversations = entry.pop("_convs")
        found.append(
            {
                **entry,
                "conversations": len(conversations),
                "first_seen": iso(refs[0][0].at),
                "last_seen": iso(refs[-1][0].at),
                "resolved": refs[-1][1],
                "memory_ids": list(dict.fromkeys(r[0].id for r in refs))[-5:],
                "projects": sorted({r[0].project for r in refs if r[0].project}),
            }
        )
    found.sort(key=lambda p: p["last_seen"], reverse=True)
    found.sort(key=lambda p: (-p["conversations"], -p["occurrences"]))  # stable: newest first within
    return found


def _decisions(conversations: dict[str, list[_Part]]) -> list[dict[str, Any]]:
    found: dict[str, dict[str, Any]] = {}
    for parts in conversations.values():
        for part in parts:
            for sentence in patterns.decisions(part.segment.text):
                found.setdefault(
                    sentence.lower(), {"decision": sentence, "said_by": part.segment.role, **_ref(part.note)}
                )
    return sorted(found.values(), key=lambda d: d["at"], reverse=True)[:MANY]


def _open_items(conversations: dict[str, list[_Part]]) -> list[dict[str, Any]]:
    """Questions (the user's and notes') with no later answer in their conversation, and to-dos
    no later part says are done."""
    found: dict[tuple[str, str], dict[str, Any]] = {}
    for parts in conversations.values():
        for index, part in enumerate(parts):
            later = [p.segment.text for p in parts[index + 1 : index + 1 + FOLLOW_UP]]
            asked = patterns.questions(part.segment.text) if part.segment.role != "assistant" else []
            for question in asked:
                if not any(patterns.answers(question, text) for text in later):
                    found.setdefault(
                        ("question", question.lower()),
                        {"kind": "question", "text": question, **_ref(part.note)},
                    )
            for todo in patterns.todos(part.segment.text):
                if not any(patterns.answers(todo, text, done=True) for text in later):
                    found.setdefault(
                        ("todo", todo.lower()), {"kind": "todo", "text": todo, **_ref(part.note)}
                    )
    return sorted(found.values(), key=lambda q: q["at"], reverse=True)[:MANY]


def _most_touched(notes: Sequence[Note], extract: Any, name: str) -> list[dict[str, Any]]:
    memories: Counter[str] = Counter()
    conversations: dict[str, set[str]] = defaultdict(set)
    last: dict[str, datetime] = {}
    for note in notes:
        for item in extract(note.text):
            memories[item] += 1
            conversations[item].add(note.conversation)
            last[item] = note.at
    ranked = sorted(memories, key=lambda item: (-memories[item], -len(conversations[item]), item))
    return [
        {
            name: item,
            "memories": memories[item],
            "conversations": len(conversations[item]),
            "last_seen": iso(last[item]),
        }
        for item in ranked[:TOP]
    ]


def _topics(notes: Sequence[Note]) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    for cluster in topics.clusters([n.text for n in notes]):
        if len(cluster.members) < 2:
            continue
        members = [notes[i] for i in cluster.members]
        key_terms = cluster.terms()
        found.append(
            {
                "label": " · ".join(key_terms),
                "terms": key_terms,
                "memories": len(members),
                "conversations": len({m.conversation for m in members}),
                "last_seen": iso(max(m.at for m in members)),
                "examples": [
                    {"memory_id": m.id, "text": patterns.snippet(m.text, 120)} for m in members[-3:]
                ],
            }
        )
    found.sort(key=lambda t: (-t["conversations"], -t["memories"], t["label"]))
    return found[:TOP]


def _last_session(notes: Sequence[Note], conversations: dict[str, list[_Part]]) -> dict[str, Any] | None:
    sessions = [n for n in notes if not n.conversation.startswith("memory:")]
    if not sessions:
        return None
    newest = max(sessions, key=lambda n: (n.at, n.id)).conversation
    parts = conversations[newest]
    turns = list(dict.fromkeys(p.note for p in parts))
    said = {role: [p for p in parts if p.segment.role == role] for role in ("user", "assistant", "note")}
    requests = said["user"] or said["note"]
    last_request = requests[-1] if requests else None
    last_reply = said["assistant"][-1] if said["assistant"] else None
    waiting = None
    if last_reply is not None and parts[-1] is last_reply:
        asked = [s for s in patterns.sentences(last_reply.segment.text) if s.endswith("?")]
        waiting = patterns.snippet(asked[-1]) if asked else None
    return {
        "conversation_id": newest,
        "project": turns[-1].project,
        "turns": len(turns),
        "started": iso(turns[0].at),
        "ended": iso(turns[-1].at),
        "last_request": patterns.snippet(last_request.segment.text) if last_request else None,
        "last_reply": patterns.snippet(last_reply.segment.text) if last_reply else None,
        "waiting_on": waiting,
        "last_turns": [
            {"memory_id": n.id, "at": iso(n.at), "text": patterns.snippet(n.text, 300)}
            for n in turns[-LAST_TURNS:]
        ],
    }


def analyze(notes: Sequence[Note]) -> dict[str, Any]:
    """Every finding over ``notes`` (oldest first)."""
    conversations = _conversations(notes)
    problems = _problems(conversations)
    return {
        "memories_analyzed": len(notes),
        "conversations": len(conversations),
        "recurring_topics": _topics(notes),
        "recurring_problems": [p for p in problems if p["conversations"] >= 2][:TOP],
        "unresolved_problems": [p for p in problems if not p["resolved"]][:TOP],
        "decisions": _decisions(conversations),
        "files": _most_touched(notes, patterns.files, "path"),
        "commands": _most_touched(notes, patterns.commands, "command"),
        "open_questions": _open_items(conversations),
        "last_session": _last_session(notes, conversations),
    }


def next_actions(findings: dict[str, Any], limit: int = TOP) -> list[dict[str, Any]]:
    """Suggestions, most pressing first: where the last session stopped, unresolved problems
    (recurring ones first), open to-dos, open questions."""
    actions: list[dict[str, Any]] = []
    last = findings.get("last_session")
    if last:
        where = f" in {last['project']}" if last.get("project") else ""
        if last.get("waiting_on"):
            action, reason = (
                f"Answer: {last['waiting_on']}",
                f"the last session{where} stopped on this question",
            )
        else:
            action = (
                f"Pick up: {last['last_request']}" if last.get("last_request") else "Pick up the last session"
            )
            reason = f"the last request of the newest session{where} ({last['ended']})"
        ids = [t["memory_id"] for t in last["last_turns"]]
        actions.append(
            {
                "kind": "resume",
                "action": action,
                "reason": reason,
                "memory_ids": ids,
                "conversation_id": last["conversation_id"],
            }
        )
    for problem in findings["unresolved_problems"]:
        sessions = problem["conversations"]
        actions.append(
            {
                "kind": "problem",
                "action": f"Fix: {problem['problem']}",
                "reason": f"seen {problem['occurrences']} time(s) in {sessions} session(s), "
                f"last {problem['last_seen']}, no fix recorded after it",
                "memory_ids": problem["memory_ids"],
                "conversation_id": None,
            }
        )
    for kind, verb, why in (
        ("todo", "Do", "left to do"),
        ("question", "Answer", "asked, no answer later in that conversation"),
    ):
        for item in findings["open_questions"]:
            if item["kind"] == kind:
                actions.append(
                    {
                        "kind": kind,
                        "action": f"{verb}: {item['text']}",
                        "reason": f"{why} ({item['at']})",
                        "memory_ids": [item["memory_id"]],
                        "conversation_id": item["conversation_id"],
                    }
                )
    return actions[:limit]


# -- the service's answers ---------------------------------------------------------------------


class Reflection:
    """The service's answers: a user's stored conversations, analysed."""

    def __init__(
        self, database: Database, owners: Owners, settings: Settings, clock: Callable[[], datetime]
    ) -> None:
        self.database = database
        self.owners = owners
        self.settings = settings
        self.clock = clock

    def load_notes(
        self, user_id: str, since: datetime | None, project: str | None
    ) -> tuple[list[Note], bool]:
        """The user's kept memories in the window, oldest first (at most ``reflection.max_memories``,
        the newest); and whether older ones were left out."""
        limit = self.settings.reflection.max_memories
        with self.database.session() as session:
            user = self.owners.find_user(session, user_id)
            query = select(Memory).where(Memory.user_id == user.id, Memory.state.in_(KEPT_STATES))
            if since is not None:
                query = query.where(Memory.created_at >= since)
            if project is not None:
                query = query.where(_in_project(project))
            rows = list(session.scalars(query.order_by(Memory.created_at.desc(), Memory.id).limit(limit + 1)))
            notes = [
                Note(
                    id=str(m.id),
                    text=m.content,
                    conversation=m.conversation_id or f"memory:{m.id}",
                    project=project_of(m),
                    at=m.captured_at or m.created_at,
                )
                for m in rows[:limit]
            ]
        notes.sort(key=lambda n: (n.at, n.id))
        return notes, len(rows) > limit

    def analyze_conversations(
        self, user_id: str, since: str | None = None, project: str | None = None
    ) -> dict[str, Any]:
        now = self.clock()
        start, scope = parse_since(since, now), _project(project)
        notes, truncated = self.load_notes(user_id, start, scope)
        findings = analyze(notes)
        result = {
            "user_id": user_id,
            "since": iso(start) if start else None,
            "project": scope,
            "truncated": truncated,
            **findings,
            "generated_at": iso(now),
        }
        return self._with_prose("analysis", result)

    def suggest_next_actions(self, user_id: str, project: str | None = None) -> dict[str, Any]:
        now = self.clock()
        scope = _project(project)
        notes, truncated = self.load_notes(user_id, None, scope)
        findings = analyze(notes)
        result = {
            "user_id": user_id,
            "project": scope,
            "truncated": truncated,
            "actions": next_actions(findings),
            "last_session": findings["last_session"],
            "generated_at": iso(now),
        }
        return self._with_prose("next_actions", result)

    def _with_prose(self, kind: str, result: dict[str, Any]) -> dict[str, Any]:
        prose = Prose.from_settings(self.settings.reflection.llm)
        result["summary"] = None
        if prose is not None:
            result["summary"], error = prose.write(kind, result)
            result["summary_model"] = prose.model
            if error:
                result["summary_error"] = error
        return result
