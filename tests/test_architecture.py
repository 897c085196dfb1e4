"""Layering, checked by parsing imports: edges talk to the service, never to the engine.

The REST routes and MCP tools are edges; every write must go through ``MemoryService`` (where
policy lives), so no edge module may import the engine (mem0, vector stores, embedders).
"""

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "claude_code_memory"
EDGES = [*sorted((PACKAGE / "api").rglob("*.py")), *sorted((PACKAGE / "mcp").rglob("*.py"))]
FORBIDDEN = ("mem0", "qdrant_edge", "qdrant_client", "onnxruntime", "claude_code_memory.engine")


def _imports(path: Path) -> list[str]:
    names = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:  # resolve relative imports against the file's package
                parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)[: -node.level]
                module = ".".join(parts + ([module] if module else []))
            names.append(module)
    return names


def test_edges_do_not_reach_the_engine() -> None:
    assert EDGES, "no edge modules found"
    offenders = {
        str(path.relative_to(PACKAGE)): name
        for path in EDGES
        for name in _imports(path)
        if name.startswith(FORBIDDEN) and path.name != "app.py"  # app.py is the composition root
    }
    assert offenders == {}


def test_the_checker_sees_relative_imports() -> None:
    # Guard against a checker that passes because it resolves nothing.
    imports = _imports(PACKAGE / "api" / "app.py")
    assert "claude_code_memory.engine.factory" in imports


# The capture proxy imports these modules in its own virtualenv, where only mitmproxy and the
# standard library exist.
PROXY_SHARED = [
    PACKAGE / "__init__.py",
    *sorted((PACKAGE / "capture").rglob("*.py")),
    PACKAGE / "policy" / "__init__.py",
    PACKAGE / "policy" / "redact.py",
]


def test_modules_the_proxy_imports_use_only_the_standard_library() -> None:
    import sys

    assert len(PROXY_SHARED) >= 5, "capture modules not found"
    offenders = {
        str(path.relative_to(PACKAGE)): name
        for path in PROXY_SHARED
        for name in _imports(path)
        if name.split(".")[0] not in sys.stdlib_module_names
        and name not in {"claude_code_memory", "claude_code_memory.capture", "claude_code_memory.policy"}
        and not name.startswith(("claude_code_memory.capture.", "claude_code_memory.policy.redact"))
    }
    assert offenders == {}
