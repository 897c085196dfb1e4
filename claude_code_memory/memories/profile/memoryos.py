"""MemoryOS's vocabulary over our tiers: a conversation pair stored, a query answered from
the three tiers, the user's profile (the shapes of BAI-LAB/MemoryOS's MCP server).

    MemoryOS(...).add_pair(user_id=, app_name=, user_input=, agent_response=, timestamp=, meta_data=)
    MemoryOS(...).retrieve(user_id=, app_name=, query=, max_results=)
    MemoryOS(...).user_profile(user_id=, include_knowledge=, include_assistant_knowledge=)

A pair is one turn, stored through the write path (policy gate, consent, quota) as the hooks and
the capture proxy store turns (``User: …`` / ``Assistant: …``), in the conversation
``meta_data["conversation_id"]`` names, else one conversation per client (MemoryOS keeps one
short-term queue per user). A retrieval answers from the tiers as they are (then refreshes them
in the background): the short-term turns (SQL only), the mid-term
pages a search finds (with their segment's heat) and the profile's facts that share the
query's words; when the vector store cannot serve, the pages are empty and ``degraded`` says
why, and the rest is still answered.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from ...errors import BadInput, Unavailable
from ...search.pipeline import Search
from ...search.request import SearchRequest
from ..recall.hook_events import turn_text
from .facts import Profile, rank_facts
from .rules import ASSISTANT, USER
from .tiers import RETRIEVAL_REFRESH_SECONDS, Tiers, turn_json

#: MemoryOS's answer when there is no profile yet.
NO_PROFILE = "No detailed user profile"
MAX_RESULTS = 50
MAX_CONVERSATION_ID = 128
TIMESTAMP_FORMAT = "%Y-%m-%d %H:%M:%S"
CATEGORY_TITLES = {
    "identity": "Identity",
    "preference": "Preferences",
    "tools": "Tools and stack",
    "project": "Projects",
    "working_style": "Working style",
}


class MemoryOS:
    def __init__(
        self,
        tiers: Tiers,
        profile: Profile,
        pipeline: Search,
        add_memory: Callable[..., list[dict[str, Any]]],
        clock: Callable[[], datetime],
    ) -> None:
        self.tiers = tiers
        self.profile = profile
        self.pipeline = pipeline
        self.add_memory = add_memory
        self.clock = clock

    def add_pair(
        self,
        *,
        user_id: str,
        app_name: str,
        user_input: str,
        agent_response: str,
        timestamp: str | None = None,
        meta_data: dict[str, Any] | None = None,
        channel: str = "mcp",
    ) -> dict[str, Any]:
        for name, value in (("user_input", user_input), ("agent_response", agent_response)):
            if not isinstance(value, str) or not value.strip():
                raise BadInput(f"{name} must be a non-empty string")
        if meta_data is not None and not isinstance(meta_data, dict):
            raise BadInput("meta_data must be a JSON object")
        meta = dict(meta_data or {})
        when = parse_timestamp(timestamp) if timestamp else self.clock()
        conversation = meta.get("conversation_id") or meta.get("session_id") or f"memoryos:{app_name}"
        if not isinstance(conversation, str) or len(conversation) > MAX_CONVERSATION_ID:
            raise BadInput(
                f"meta_data.conversation_id must be a string of at most {MAX_CONVERSATION_ID} characters"
            )
        project = meta.get("project") if isinstance(meta.get("project"), str) else None
        results = self.add_memory(
            user_id=user_id,
            app_name=app_name,
            text=turn_text([("user", user_input), ("assistant", agent_response)]),
            metadata={"source": "memoryos", **({"meta_data": meta} if meta else {})},
            channel=channel,
            project=project,
            conversation_id=conversation,
            captured_at=when,
        )
        pending = any(result.get("event") == "PENDING" for result in results)
        return {
            "status": "success",
            "message": "Memory is waiting for the user's consent"
            if pending
            else "Memory has been successfully added to MemoryOS",
            "timestamp": when.strftime(TIMESTAMP_FORMAT),
            "details": {
                "user_input_length": len(user_input),
                "agent_response_length": len(agent_response),
                "has_meta_data": meta_data is not None,
                "conversation_id": conversation,
            },
            "results": results,
        }

    def retrieve(self, *, user_id: str, app_name: str, query: str, max_results: int = 10) -> dict[str, Any]:
        if not isinstance(query, str) or not query.strip():
            raise BadInput("query must be a non-empty string")
        if (
            not isinstance(max_results, int)
            or isinstance(max_results, bool)
            or not 1 <= max_results <= MAX_RESULTS
        ):
            raise BadInput(f"max_results must be an integer from 1 to {MAX_RESULTS}")
        short = self.tiers.short_term(user_id)
        answer: dict[str, Any] = {
            "status": "success",
            "query": query,
            "timestamp": self.clock().strftime(TIMESTAMP_FORMAT),
        }
        pages: list[dict[str, Any]] = []
        try:
            pages = self._pages(user_id, app_name, query, max_results, {t["memory_id"] for t in short})
        except Unavailable as exc:  # the short-term and long-term tiers need no vectors
            answer["degraded"] = f"mid-term pages unavailable: {exc.message}"
        facts = self.profile.facts(user_id)
        user_facts = [f for f in facts if f["subject"] == USER]
        assistant_facts = [f for f in facts if f["subject"] == ASSISTANT]
        found_user = rank_facts(user_facts, query, len(user_facts))
        found_assistant = rank_facts(assistant_facts, query, len(assistant_facts))
        answer.update(
            {
                "user_profile": profile_summary(user_facts),
                "short_term_memory": short,
                "short_term_count": len(short),
                "retrieved_pages": pages,
                "retrieved_user_knowledge": [knowledge(f) for f in found_user[:max_results]],
                "retrieved_assistant_knowledge": [knowledge(f) for f in found_assistant[:max_results]],
                "total_pages_found": len(pages),
                "total_user_knowledge_found": len(found_user),
                "total_assistant_knowledge_found": len(found_assistant),
            }
        )
        # The visits this retrieval made, new turns, promotion: in the background, now and then.
        self.tiers.schedule_refresh(user_id, unless_within=RETRIEVAL_REFRESH_SECONDS)
        return answer

    def user_profile(
        self, *, user_id: str, include_knowledge: bool = True, include_assistant_knowledge: bool = False
    ) -> dict[str, Any]:
        self.tiers.refresh(user_id)
        facts = self.profile.facts(user_id)
        user_facts = [f for f in facts if f["subject"] == USER]
        answer: dict[str, Any] = {
            "status": "success",
            "timestamp": self.clock().strftime(TIMESTAMP_FORMAT),
            "user_id": user_id,
            "assistant_id": "claude-code-memory",
            "user_profile": profile_summary(user_facts),
        }
        if include_knowledge:
            answer["user_knowledge"] = [knowledge(f) for f in user_facts]
            answer["user_knowledge_count"] = len(user_facts)
        if include_assistant_knowledge:
            assistant = [knowledge(f) for f in facts if f["subject"] == ASSISTANT]
            answer["assistant_knowledge"] = assistant
            answer["assistant_knowledge_count"] = len(assistant)
        return answer

    def _pages(
        self, user_id: str, app_name: str, query: str, max_results: int, skip: set[str]
    ) -> list[dict[str, Any]]:
        hits = self.pipeline.search(
            SearchRequest(
                user_id=user_id,
                app_name=app_name,
                query=query,
                limit=min(100, max_results + len(skip)),
                with_categories=False,
            )
        )
        hits = [hit for hit in hits if str(hit.memory.id) not in skip][:max_results]
        with self.tiers.database.session() as session:
            heat = self.tiers.heat_of(session, {h.memory.segment_id for h in hits if h.memory.segment_id})
        pages = []
        for hit in hits:
            memory = hit.memory
            turn = turn_json(memory.id, memory.content, memory.captured_at or memory.created_at)
            pages.append(
                {
                    "user_input": turn["user_input"],
                    "agent_response": turn["agent_response"],
                    "timestamp": turn["timestamp"],
                    "meta_info": {
                        "memory_id": str(memory.id),
                        "conversation_id": memory.conversation_id,
                        "segment_id": str(memory.segment_id) if memory.segment_id else None,
                        "heat": heat.get(memory.segment_id) if memory.segment_id else None,
                        "score": round(hit.score, 6),
                    },
                }
            )
        return pages


def knowledge(fact: dict[str, Any]) -> dict[str, Any]:
    """A fact in MemoryOS's knowledge shape, with its id, category and sources."""
    when = fact["updated_at"] or fact["created_at"]
    return {
        "knowledge": fact["text"],
        "timestamp": datetime.fromisoformat(when.rstrip("Z")).strftime(TIMESTAMP_FORMAT) if when else None,
        "id": fact["id"],
        "category": fact["category"],
        "memory_ids": fact["memory_ids"],
    }


def profile_summary(user_facts: list[dict[str, Any]]) -> str:
    """The profile as MemoryOS's one text: a line per category."""
    if not user_facts:
        return NO_PROFILE
    lines = []
    for category, title in CATEGORY_TITLES.items():
        texts = [f["text"] for f in user_facts if f["category"] == category]
        if texts:
            lines.append(
                f"{title}: " + " ".join(t if t.endswith((".", "!", "…")) else t + "." for t in texts)
            )
    return "\n".join(lines)


def parse_timestamp(value: object) -> datetime:
    """MemoryOS's ``YYYY-MM-DD HH:MM:SS`` or an ISO 8601 time, as naive UTC."""
    if not isinstance(value, str):
        raise BadInput("timestamp must be a string like 2025-01-31 14:05:00")
    try:
        parsed = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        raise BadInput(f"timestamp {value!r} is not YYYY-MM-DD HH:MM:SS or ISO 8601") from None
    if parsed.tzinfo is not None:
        parsed = parsed.astimezone(UTC).replace(tzinfo=None)
    return parsed
