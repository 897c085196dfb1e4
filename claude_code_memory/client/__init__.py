"""The client side: what a program on the user's machine uses to reach the server.

- :mod:`.mcp_client` — ``Mem0MCPClient``, the five MCP tools as blocking method calls;
- :mod:`.conversation_memory` — ``ClaudeCodeMemoryManager`` and ``ClaudeCodeWithMemory``:
  recall for a conversation's newest message and capture of the turn (the integration
  guide's memory manager);
- :mod:`.remote` — the REST client the CLI uses, and where its URL and token come from.

``from claude_code_memory.client import Mem0MCPClient`` keeps working as it did when this was
one module. The names load on first use, so the CLI's REST commands do not import the MCP SDK.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "Mem0MCPClient": ".mcp_client",
    "TRANSPORTS": ".mcp_client",
    "parse_tool_output": ".mcp_client",
    "ClaudeCodeMemoryManager": ".conversation_memory",
    "ClaudeCodeWithMemory": ".conversation_memory",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(_EXPORTS[name], __name__), name)
