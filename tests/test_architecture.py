"""Layering, checked by parsing imports: edges talk to the service, never to the engine or
the database.

The REST routes and MCP tools are edges; every write must go through ``MemoryService`` (where
policy lives), so no edge module may import the engine (mem0, vector stores, embedders). Reads
live in the service layer too (``memories/``): no edge (api, mcp, cli, ui) imports the ORM.
"""

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "claude_code_memory"
EDGES = [*sorted((PACKAGE / "api").rglob("*.py")), *sorted((PACKAGE / "mcp").rglob("*.py"))]
FORBIDDEN = ("mem0", "qdrant_edge", "qdrant_client", "onnxruntime", "claude_code_memory.engine")


def _imports_in(source: str, module_path: Path, *, with_names: bool = False) -> list[str]:
    """The modules ``source`` imports; ``module_path`` is its file's path from the package's
    parent (relative imports resolve against it). ``with_names`` adds ``module.name`` for each
    name of a ``from`` import, so ``from .. import db`` reads as ``claude_code_memory.db``."""
    names = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:  # resolve relative imports against the file's package
                parts = list(module_path.with_suffix("").parts)[: -node.level]
                module = ".".join(parts + ([module] if module else []))
            names.append(module)
            if with_names:
                names += [f"{module}.{alias.name}" for alias in node.names]
    return names


def _imports(path: Path, *, with_names: bool = False) -> list[str]:
    return _imports_in(path.read_text(), path.relative_to(PACKAGE.parent), with_names=with_names)


def test_edges_do_not_reach_the_engine() -> None:
    assert EDGES, "no edge modules found"
    offenders = {
        str(path.relative_to(PACKAGE)): name
        for path in EDGES
        for name in _imports(path)
        if name.startswith(FORBIDDEN)
    }
    assert offenders == {}


def test_the_checker_sees_relative_imports() -> None:
    # Guard against a checker that passes because it resolves nothing.
    imports = _imports(PACKAGE / "api" / "deps.py")  # deps.py hands the routes the server's Retention
    assert "claude_code_memory.memories.lifecycle.retention" in imports


#: Modules that serve people and programs; the database is the service layer's (memories/).
DATABASE_FREE = [
    path for package in ("api", "mcp", "cli", "ui") for path in sorted((PACKAGE / package).rglob("*.py"))
]
DATABASE = "claude_code_memory.db"


def _database_imports(source: str, module_path: Path) -> list[str]:
    return [
        name
        for name in _imports_in(source, module_path, with_names=True)
        if name == DATABASE or name.startswith(DATABASE + ".")
    ]


def test_edges_do_not_import_the_database() -> None:
    assert len(DATABASE_FREE) >= 30, "edge modules not found"
    offenders = {
        str(path.relative_to(PACKAGE)): found
        for path in DATABASE_FREE
        if (found := _database_imports(path.read_text(), path.relative_to(PACKAGE.parent)))
    }
    assert offenders == {}


def test_the_database_check_catches_every_way_of_importing_it() -> None:
    route = Path("claude_code_memory/api/routes/planted.py")
    for source in (
        "from ...db.models import Memory",
        "from ... import db",
        "from ...db import models",
        "import claude_code_memory.db.database",
        "from claude_code_memory.db.models import App",
        "def f():\n    from ...db.models import User\n",
    ):
        assert _database_imports(source, route), source
    assert _database_imports("from ...memories import queries\nimport dbm", route) == []


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


# The package root holds what every layer shares; each layer is a folder named for what it owns.
SHARED_ROOT_MODULES = {
    "__init__.py",  # the version
    "config.py",  # every setting, validated in one place
    "errors.py",  # the typed errors each edge translates
    "manager.py",  # an alias kept for the first release's import path (client/conversation_memory.py)
}
LAYERS = {
    "api",  # edge: REST routes and the composition root
    "mcp",  # edge: MCP tools and transports
    "cli",  # edge: the ccmem command
    "ui",  # edge: the web UI, over REST only
    "memories",  # server core: writes through the gate, states, reads, consent, retention
    "search",  # server core: the search pipeline and its ranking
    "store",  # below search: a memory's values, owners, vectors and access log
    "auth",  # server core: users' tokens
    "policy",  # pure: the write gate and redaction (shared with the proxy)
    "capture",  # pure: Anthropic bodies to turns (shared with the proxy)
    "engine",  # mem0, the vector stores and the embedder
    "db",  # the metadata database: models and migrations
    "client",  # the client side: MCP client, conversation memory, REST client
    "stack",  # the native stack: services and their supervisor
}


def test_the_package_root_holds_only_shared_modules_and_layer_folders() -> None:
    modules = {path.name for path in PACKAGE.glob("*.py")}
    folders = {path.name for path in PACKAGE.iterdir() if path.is_dir() and (path / "__init__.py").exists()}
    assert modules == SHARED_ROOT_MODULES
    assert folders == LAYERS


def test_no_module_outgrows_one_noun() -> None:
    # Split a module when it picks up a second noun; the redaction pattern tables are data.
    sizes = {
        str(path.relative_to(PACKAGE)): len(path.read_text().splitlines())
        for path in PACKAGE.rglob("*.py")
        if path.name != "redact.py"
    }
    assert {name: lines for name, lines in sizes.items() if lines > 600} == {}
