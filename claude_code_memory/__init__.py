"""claude-code-memory: a self-hosted, OpenMemory-compatible memory server for MCP clients."""

__version__ = "0.1.0"
