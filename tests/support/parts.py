"""The server's parts in the test process: ``ServerParts(settings)`` over a data directory of the
test's own, with built-in defaults and nothing from the developer's config file or environment."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from claude_code_memory.config import Settings, load_settings
from claude_code_memory.memories.server_parts import ServerParts
from claude_code_memory.memories.service import MemoryService


def settings_for(data_dir: Path, overrides: Mapping[str, object] | None = None) -> Settings:
    """Defaults, ``server.data_dir`` = ``data_dir``, then ``overrides`` (dotted keys)."""
    return load_settings(
        config_path=None, environ={}, overrides={"server.data_dir": str(data_dir), **(overrides or {})}
    )


@contextmanager
def open_parts(data_dir: Path, overrides: Mapping[str, object] | None = None) -> Iterator[ServerParts]:
    """The parts, closed (stores released) when the block ends."""
    parts = ServerParts(settings_for(data_dir, overrides))
    try:
        yield parts
    finally:
        parts.close()


@contextmanager
def open_service(data_dir: Path, overrides: Mapping[str, object] | None = None) -> Iterator[MemoryService]:
    """The memory service of :func:`open_parts`."""
    with open_parts(data_dir, overrides) as parts:
        yield parts.service
