"""An optional prose summary of the reflection's findings, from an OpenAI-compatible endpoint.

    Prose.from_settings(settings.reflection.llm)   None unless ``reflection.llm.base_url`` is set
    prose.write(kind, findings) -> (text, None) or (None, why it failed)

One ``POST {base_url}/chat/completions`` (the Chat Completions wire format, which OpenAI,
Ollama, vLLM, llama.cpp's server and LiteLLM all speak) with the findings as JSON; the answer is
``choices[0].message.content``. The API key is read from the environment variable
``reflection.llm.api_key_env`` names, when the call is made; it is never stored or logged. A
failure is reported beside the findings, never instead of them.
"""

from __future__ import annotations

import json
import logging
import os
from typing import Any

from ...config import ReflectionLlmSettings

log = logging.getLogger(__name__)

INSTRUCTIONS = {
    "analysis": (
        "You review a developer's stored conversations with a coding assistant. From the JSON "
        "findings below (recurring topics, problems, decisions, files, commands, open questions, "
        "the last session), write a short summary in plain prose: the main themes, the problems "
        "that keep coming back, the decisions that stand, and what is still open. Use only the "
        "findings; do not invent facts. At most 200 words."
    ),
    "next_actions": (
        "You help a developer pick up their work. From the JSON below (suggested actions with "
        "reasons, and where the last session stopped), write a short, ordered list of next steps "
        "in plain prose, most pressing first. Use only what the JSON says. At most 150 words."
    ),
}
#: The findings sent are cut to this many characters (a prompt, not an archive).
MAX_PROMPT_CHARS = 24_000


class Prose:
    def __init__(self, settings: ReflectionLlmSettings) -> None:
        assert settings.base_url is not None and settings.model is not None
        self.url = settings.base_url.rstrip("/") + "/chat/completions"
        self.model = settings.model
        self.api_key_env = settings.api_key_env
        self.timeout = settings.timeout_seconds
        self.max_tokens = settings.max_tokens

    @classmethod
    def from_settings(cls, settings: ReflectionLlmSettings) -> Prose | None:
        return cls(settings) if settings.base_url else None

    def request(self, kind: str, findings: dict[str, Any]) -> dict[str, Any]:
        """The Chat Completions request body."""
        facts = json.dumps(findings, default=str, ensure_ascii=False)[:MAX_PROMPT_CHARS]
        return {
            "model": self.model,
            "messages": [
                {"role": "system", "content": INSTRUCTIONS[kind]},
                {"role": "user", "content": facts},
            ],
            "temperature": 0.2,
            "max_tokens": self.max_tokens,
            "stream": False,
        }

    def write(self, kind: str, findings: dict[str, Any]) -> tuple[str | None, str | None]:
        import httpx  # only with an LLM configured: `ccmem serve` starts without the HTTP client

        headers = {"Content-Type": "application/json"}
        key = os.environ.get(self.api_key_env) if self.api_key_env else None
        if key:
            headers["Authorization"] = f"Bearer {key}"
        try:
            response = httpx.post(
                self.url, json=self.request(kind, findings), headers=headers, timeout=self.timeout
            )
        except httpx.HTTPError as exc:
            log.warning("reflection LLM at %s cannot be reached: %s", self.url, exc.__class__.__name__)
            return None, f"the LLM cannot be reached ({exc.__class__.__name__})"
        if response.status_code != 200:
            log.warning("reflection LLM at %s answered HTTP %s", self.url, response.status_code)
            return None, f"the LLM answered HTTP {response.status_code}"
        try:
            content = response.json()["choices"][0]["message"]["content"]
        except (ValueError, KeyError, IndexError, TypeError):
            return None, "the LLM's answer is not a chat completion"
        if not isinstance(content, str) or not content.strip():
            return None, "the LLM's answer is empty"
        return content.strip(), None
