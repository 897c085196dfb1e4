"""Profile facts by an LLM: an OpenAI-compatible ``POST {base_url}/chat/completions``
(``profile.llm``: a local server such as Ollama, llama.cpp or vLLM, or a hosted one).

    LlmExtractor(settings).facts_of(text) -> [Fact]

The model is asked for a JSON object ``{"facts": [{"subject", "category", "text"}]}`` and its
answer is checked: unknown subjects or categories and empty texts are dropped. The key is read
from the environment variable ``profile.llm.api_key_env`` names at each call, never stored or
logged. A failure raises :class:`~claude_code_memory.errors.Unavailable`; the profile then
falls back to the rules for that memory (memories/profile/facts.py).
"""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Any

from ...config import ProfileLlmSettings
from ...errors import Unavailable
from .rules import ASSISTANT, CATEGORIES, MAX_FACT_CHARS, USER, Fact

if TYPE_CHECKING:  # httpx is loaded only with an LLM configured: `ccmem serve` starts without it
    import httpx

SYSTEM_PROMPT = (
    "You extract lasting facts for a long-term memory. Given a note or a conversation turn "
    "(paragraphs starting 'User:' and 'Assistant:'), list the facts worth remembering across "
    "sessions: about the user (subject 'user', category one of identity, preference, tools, "
    "project, working_style) and knowledge the assistant established, such as decisions, where "
    "things are, how things run (subject 'assistant', category 'knowledge'). Ignore requests "
    "of the moment, questions, greetings and thanks. Answer only with a JSON object "
    '{"facts": [{"subject": "user", "category": "preference", "text": "..."}]}; each text one '
    'short sentence in the user\'s words. No facts: {"facts": []}.'
)
_USER_CATEGORIES = set(CATEGORIES) - {"knowledge"}


class LlmExtractor:
    def __init__(self, settings: ProfileLlmSettings, transport: httpx.BaseTransport | None = None) -> None:
        if not settings.base_url or not settings.model:
            raise ValueError("profile.llm needs base_url and model")
        import httpx

        self.settings = settings
        self.url = settings.base_url.rstrip("/") + "/chat/completions"
        self.client = httpx.Client(timeout=settings.timeout_seconds, transport=transport)

    def facts_of(self, text: str) -> list[Fact]:
        headers = {"Content-Type": "application/json"}
        key = os.environ.get(self.settings.api_key_env) if self.settings.api_key_env else None
        if key:
            headers["Authorization"] = f"Bearer {key}"
        body = {
            "model": self.settings.model,
            "messages": [
                {"role": "system", "content": SYSTEM_PROMPT},
                {"role": "user", "content": text},
            ],
            "temperature": 0,
            "response_format": {"type": "json_object"},
        }
        import httpx

        try:
            response = self.client.post(self.url, json=body, headers=headers)
        except httpx.HTTPError as exc:
            raise Unavailable(f"profile LLM unreachable: {exc.__class__.__name__}") from exc
        if response.status_code != 200:
            raise Unavailable(f"profile LLM answered HTTP {response.status_code}")
        try:
            content = response.json()["choices"][0]["message"]["content"]
            return parse_facts(content)
        except (KeyError, IndexError, TypeError, ValueError) as exc:
            raise Unavailable(f"profile LLM answer is not the expected JSON: {exc}") from exc

    def close(self) -> None:
        self.client.close()


def parse_facts(content: str) -> list[Fact]:
    """The facts of a model's answer (a JSON object, possibly inside a Markdown code fence)."""
    stripped = content.strip()
    if stripped.startswith("```"):
        stripped = stripped.strip("`").removeprefix("json").strip()
    data: Any = json.loads(stripped)
    items = data.get("facts", []) if isinstance(data, dict) else data
    if not isinstance(items, list):
        raise ValueError("facts is not a list")
    facts: list[Fact] = []
    for item in items:
        if not isinstance(item, dict):
            continue
        subject, category = item.get("subject"), item.get("category")
        text = item.get("text")
        if not isinstance(text, str) or not text.strip():
            continue
        text = " ".join(text.split())[:MAX_FACT_CHARS]
        if subject == USER and category in _USER_CATEGORIES:
            facts.append(Fact(USER, category, text))
        elif subject == ASSISTANT and category == "knowledge":
            facts.append(Fact(ASSISTANT, "knowledge", text))
    return facts
