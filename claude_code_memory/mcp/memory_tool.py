"""The MCP tool ``memory_20250818``: Anthropic's memory tool on our store, for the MCP caller's user.

Claude Code lists it as ``mcp__memory__memory_20250818``; the proxy's bridge (docs/memory-tool.md)
can offer it to the model as the native ``memory`` tool. It takes the native tool's input and
answers the native result texts (``memories/memory_files/commands.py``). A failure is an error result
(``isError: true``) whose text is exactly the reference's, as a model trained on the native
tool expects: raising would make the SDK prefix it with "Error executing tool ...".
"""

from __future__ import annotations

from typing import Annotated, Literal

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, Field

from .caller import GetService, current_caller, run

TOOL_NAME = "memory_20250818"
DESCRIPTION = (
    "Your memory directory /memories: files that persist across conversations, kept in the user's "
    "long-term memory store (each file is a memory: searchable, redacted of secrets, reviewed by "
    "the user). ALWAYS view /memories before starting a task, and record progress, decisions and "
    "what you learn as you go. Commands: view (path; view_range [start, end] for a file's lines, "
    "-1 = to the end), create (path, file_text), str_replace (path, old_str, new_str; old_str "
    "must appear exactly once), insert (path, insert_line: the line after which, 0 = at the top, "
    "insert_text), delete (path: a file or a directory), rename (old_path, new_path), "
    "clear_all_memory. Every path starts with /memories."
)
Command = Literal["view", "create", "str_replace", "insert", "delete", "rename", "clear_all_memory"]
EDITS = ToolAnnotations(read_only_hint=False, destructive_hint=True, open_world_hint=False)


class Output(BaseModel):
    """The command's result text, as the native tool answers it."""

    result: str


def register(server: MCPServer, get_service: GetService, *, structured: bool = False) -> None:
    """Add the tool to ``server``; :func:`.caller.run` raises our typed errors as ``ToolError``,
    which this tool answers as an error result. ``structured``: declare an ``outputSchema`` and
    answer ``structuredContent`` too (the dialects; the default list keeps the tool as it was)."""

    async def memory_20250818(
        command: Annotated[Command, Field(description="The memory command to run")],
        path: Annotated[str | None, Field(description="A path under /memories")] = None,
        file_text: Annotated[str | None, Field(description="create: the new file's content")] = None,
        old_str: Annotated[str | None, Field(description="str_replace: the text to replace")] = None,
        new_str: Annotated[str | None, Field(description="str_replace: its replacement")] = None,
        insert_line: Annotated[
            int | None, Field(description="insert: the line after which to insert (0: at the top)")
        ] = None,
        insert_text: Annotated[str | None, Field(description="insert: the text to insert")] = None,
        view_range: Annotated[
            list[int] | None, Field(description="view: [start_line, end_line] of a file; -1 = to the end")
        ] = None,
        old_path: Annotated[str | None, Field(description="rename: the file or directory to move")] = None,
        new_path: Annotated[str | None, Field(description="rename: where to")] = None,
    ) -> CallToolResult:
        caller = current_caller()
        given = {
            "command": command,
            "path": path,
            "file_text": file_text,
            "old_str": old_str,
            "new_str": new_str,
            "insert_line": insert_line,
            "insert_text": insert_text,
            "view_range": view_range,
            "old_path": old_path,
            "new_path": new_path,
        }
        try:
            text = await run(
                get_service().memory_tool,
                user_id=caller.user_id,
                app_name=caller.client_name,
                command={key: value for key, value in given.items() if value is not None},
            )
        except ToolError as error:
            return CallToolResult(content=[TextContent(text=str(error))], is_error=True)
        return CallToolResult(
            content=[TextContent(text=text)], structured_content={"result": text} if structured else None
        )

    hints = EDITS
    if structured:
        memory_20250818.__annotations__["return"] = Annotated[CallToolResult, Output]
        # str_replace and insert change the file again on a second call: not idempotent.
        hints = EDITS.model_copy(update={"idempotent_hint": False})
    server.tool(name=TOOL_NAME, description=DESCRIPTION, annotations=hints)(memory_20250818)
