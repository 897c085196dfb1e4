"""claude-code-memory: a self-hosted, OpenMemory-compatible memory server for MCP clients."""

__version__ = "0.3.0"

#: What ``GET /health`` names itself, so a client knows it reached this server and not another.
SERVICE_NAME = "claude-code-memory"
