"""Where the MCP endpoint answers, known without loading the MCP SDK (see :mod:`.lazy`)."""

from __future__ import annotations

MESSAGE_PATH = "/mcp/messages/"
SSE_PATH = "/mcp/{client_name}/sse/{user_id}"
HTTP_PATH = "/mcp/{client_name}/http/{user_id}"
DEFAULT_MAX_BODY_BYTES = 4 * 1024 * 1024

#: Every route of the endpoint, as (path, name, what answers it), in the order they are matched.
ROUTES: tuple[tuple[str, str | None, str], ...] = (
    (SSE_PATH, "mcp_sse", "sse_connect"),
    (MESSAGE_PATH, "mcp_messages", "sse_message"),
    (MESSAGE_PATH.rstrip("/"), None, "sse_message"),
    (SSE_PATH + "/messages/", "mcp_sse_messages", "sse_message"),
    (SSE_PATH + "/messages", None, "sse_message"),
    (HTTP_PATH, "mcp_http", "streamable_http"),
    (HTTP_PATH + "/", None, "streamable_http"),
)
