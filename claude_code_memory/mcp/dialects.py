"""Tool sets by dialect: which tools one MCP connection is offered (docs/mcp.md).

A client picks its dialect with ``?tools=<name>`` on either transport's URL; without it the
endpoint answers as it always has (:data:`DEFAULT`). Each dialect is one of the systems this
product grew from, with that system's own tool names, argument names and result shapes, or a
small set for Claude Code. Two dialects cannot share one list where their names collide
(mcp-mitm-mem0's ``add_memory(messages)`` and MemoryOS's ``add_memory(user_input, ...)``), so
each connection is served by the server of its dialect; every one runs over the same service,
so a memory added in one dialect is found in every other.

Known without loading the MCP SDK: the transports check the parameter before anything else.
"""

from __future__ import annotations

from ..errors import BadInput

QUERY_PARAMETER = "tools"

#: The list every endpoint offered before dialects existed, unchanged.
DEFAULT = "default"

OPENMEMORY = ("add_memories", "search_memory", "list_memories", "delete_memories", "delete_all_memories")
SCOPES = (
    "set_project",
    "complete_task",
    "move_memories",
    "link_memories",
    "list_entities",
    "search_entities",
    "restore_memories",
)
MEMORY_TOOL = ("memory_20250818",)
MEMORYOS = ("add_memory", "retrieve_memory", "get_user_profile")
MIN_MEMORY = ("store_memory", "retrieve_context", "fetch", "get_context_info")
REFLECTION = ("analyze_conversations", "suggest_next_actions")
MITM_MEM0 = (
    "search_memories",
    "list_memories",
    "add_memory",
    "delete_memory",
    "analyze_conversations",
    "suggest_next_actions",
)
#: Search, add, delete and the memory tool: what a model needs beside the hooks (docs/mcp.md).
CLAUDE_CODE = ("search_memory", "add_memories", "delete_memories", "memory_20250818")

_DEFAULT_TOOLS = OPENMEMORY + SCOPES + MEMORY_TOOL + MEMORYOS + MIN_MEMORY + REFLECTION

#: Each dialect's tools, in the order they are listed.
TOOLS: dict[str, tuple[str, ...]] = {
    DEFAULT: _DEFAULT_TOOLS,
    "openmemory": OPENMEMORY,
    "memoryos": MEMORYOS,
    "min-memory": SCOPES + MIN_MEMORY,
    "mitm-mem0": MITM_MEM0,
    "memory-tool": MEMORY_TOOL,
    "claude-code": CLAUDE_CODE,
    # Every tool whose name is free: mcp-mitm-mem0's add_memory and list_memories collide with
    # MemoryOS's and OpenMemory's, which keep the names here; its other tools join.
    "all": _DEFAULT_TOOLS + ("search_memories", "delete_memory"),
}

NAMES = tuple(name for name in TOOLS if name != DEFAULT)


def dialect_of(raw: str | None) -> str:
    """The dialect a ``?tools=`` value names (None or absent: :data:`DEFAULT`); BadInput else."""
    if raw is None:
        return DEFAULT
    name = raw.strip().lower()
    if name in NAMES:
        return name
    raise BadInput(
        f"unknown tool set {raw!r} in ?{QUERY_PARAMETER}=: use one of {', '.join(NAMES)}, "
        "or leave the parameter out for the default list"
    )
