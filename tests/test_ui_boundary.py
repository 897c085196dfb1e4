"""The web UI is an HTTP client of the API and nothing more: it never imports the service,
the engine, the database or the API's own modules. Checked two ways: by parsing its imports,
and by importing it in a fresh interpreter and looking at what got loaded."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "claude_code_memory"
UI_MODULES = sorted((PACKAGE / "ui").rglob("*.py"))
#: What the UI may import from this package: its own modules, settings, the version.
ALLOWED_OWN = ("claude_code_memory.ui", "claude_code_memory.config", "claude_code_memory.rate_limits.limiter")
NEVER_LOADED = (
    "claude_code_memory.memories",  # the service core: writes, states, reads, consent, retention
    "claude_code_memory.search",
    "claude_code_memory.engine",
    "claude_code_memory.db",
    "claude_code_memory.api",
    "claude_code_memory.auth.identity",
    "sqlalchemy",
    "mem0",
    "qdrant_edge",
    "onnxruntime",
)


def _imports(path: Path) -> list[str]:
    names = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:
                parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)[: -node.level]
                module = ".".join(parts + ([module] if module else []))
            names.append(module)
    return names


def test_ui_modules_import_only_settings_and_themselves_from_the_package() -> None:
    assert len(UI_MODULES) >= 5, "the UI package was not found"
    offenders = {
        f"{path.relative_to(PACKAGE)}: {name}"
        for path in UI_MODULES
        for name in _imports(path)
        if name.startswith("claude_code_memory")
        and name != "claude_code_memory"  # the package itself: __version__
        and not name.startswith(ALLOWED_OWN)
    }
    assert offenders == set()


def test_the_checker_resolves_relative_imports() -> None:
    assert "claude_code_memory.config" in _imports(PACKAGE / "ui" / "app.py")


@pytest.mark.integration
def test_importing_the_ui_loads_no_storage_or_engine() -> None:
    script = "import json, sys; import claude_code_memory.ui.app; print(json.dumps(sorted(sys.modules)))"
    completed = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    loaded = json.loads(completed.stdout)
    assert "claude_code_memory.ui.app" in loaded
    assert [name for name in loaded if name.startswith(NEVER_LOADED)] == []
