"""Moved to :mod:`claude_code_memory.client.conversation_memory`.

This name stays so that programs written against the first release
(``from claude_code_memory.manager import ClaudeCodeMemoryManager``) keep working.
"""

from .client.conversation_memory import (
    CaptureResult,
    ClaudeCodeMemoryManager,
    ClaudeCodeWithMemory,
    Turn,
    format_context,
    latest_turn,
    message_text,
)

__all__ = [
    "CaptureResult",
    "ClaudeCodeMemoryManager",
    "ClaudeCodeWithMemory",
    "Turn",
    "format_context",
    "latest_turn",
    "message_text",
]
