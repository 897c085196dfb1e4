"""One door into the service: edges call real, typed methods of the parts the service exposes.

Three ways back to the old doors are closed here, each detector also run on a planted
violation so that a detector that finds nothing is not mistaken for a clean tree:

- an alias table on ``MemoryService`` (``self.add_memory = self.writes.add_memory``): a reader
  and a type checker lose the call at the alias;
- string dispatch in ``mcp/`` (``getattr(get_service(), method)``): mypy cannot check the
  arguments a tool passes;
- a feature module that imports the service it is part of (``memories/service.py`` imports the
  features, so that is a cycle, under ``TYPE_CHECKING`` too).
"""

from __future__ import annotations

import ast
import inspect
from collections.abc import Iterator
from pathlib import Path

import pytest

import claude_code_memory
import claude_code_memory.engine  # noqa: F401 - first: it sets mem0's telemetry switches before mem0 loads
from claude_code_memory.config import load_settings
from claude_code_memory.memories.server_parts import ServerParts

PACKAGE = Path(claude_code_memory.__file__).parent


# -- no alias attributes --------------------------------------------------------------------------
def borrowed_methods(owner: object) -> list[str]:
    """Instance attributes of ``owner`` that are methods bound to another object: aliases."""
    return sorted(
        name for name, value in vars(owner).items() if inspect.ismethod(value) and value.__self__ is not owner
    )


@pytest.fixture(scope="module")
def parts(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerParts]:
    settings = load_settings(
        config_path=None,
        environ={},
        overrides={"server.data_dir": str(tmp_path_factory.mktemp("door") / "data")},
    )
    built = ServerParts(settings)
    try:
        yield built
    finally:
        built.close()


def test_the_service_and_the_server_parts_have_no_alias_attributes(parts: ServerParts) -> None:
    assert borrowed_methods(parts.service) == []
    assert borrowed_methods(parts) == []


def test_the_alias_detector_finds_a_planted_alias() -> None:
    class Writes:
        def add_memory(self) -> None: ...

    class Service:
        def __init__(self) -> None:
            self.writes = Writes()
            self.add_memory = self.writes.add_memory

    assert borrowed_methods(Service()) == ["add_memory"]


# -- no string dispatch in mcp/ -------------------------------------------------------------------
def dynamic_lookups(source: str) -> list[int]:
    """Lines where ``getattr`` or ``operator.methodcaller`` takes a name that is not a literal,
    outside a module's own ``__getattr__`` (which lazily loads public names, never service
    methods)."""
    tree = ast.parse(source)
    module_getattr = {
        id(node)
        for top in tree.body
        if isinstance(top, ast.FunctionDef) and top.name == "__getattr__"
        for node in ast.walk(top)
    }
    lines = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or id(node) in module_getattr:
            continue
        function = node.func
        name = function.id if isinstance(function, ast.Name) else getattr(function, "attr", None)
        by_name = name == "getattr" and len(node.args) >= 2 and not isinstance(node.args[1], ast.Constant)
        if by_name or name == "methodcaller":
            lines.append(node.lineno)
    return lines


def test_no_mcp_module_looks_up_a_service_method_by_name() -> None:
    found = {
        path.name: lines
        for path in sorted((PACKAGE / "mcp").glob("*.py"))
        if (lines := dynamic_lookups(path.read_text(encoding="utf-8")))
    }
    assert found == {}


def test_the_dispatch_detector_finds_planted_string_dispatch() -> None:
    planted = (
        "async def call(method, **kwargs):\n"
        "    return await run(getattr(get_service(), method), **kwargs)\n"
        "def __getattr__(name):\n"
        "    return getattr(server, name)\n"  # a module's lazy names: allowed
    )
    assert dynamic_lookups(planted) == [2]


# -- no feature module imports the service --------------------------------------------------------
SERVICE = "claude_code_memory.memories.service"
#: The service itself and the two modules that build it.
BUILDERS = {SERVICE, "claude_code_memory.memories.server_parts"}


def imported_modules(source: str, package: str) -> set[str]:
    """Every module ``source`` imports (relative imports resolved against ``package``, the one
    the module is in; the names of ``from x import y`` included, since ``y`` may be a module),
    under TYPE_CHECKING too."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{parent}.{base}" if base else parent
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return found


def test_no_feature_module_imports_the_service() -> None:
    importers = []
    for path in sorted((PACKAGE / "memories").rglob("*.py")):
        relative = path.relative_to(PACKAGE.parent).with_suffix("")
        module = ".".join(relative.parts).removesuffix(".__init__")
        package = ".".join(relative.parts[:-1])
        if module in BUILDERS:
            continue
        if SERVICE in imported_modules(path.read_text(encoding="utf-8"), package):
            importers.append(module)
    assert importers == []


def test_the_import_detector_finds_a_planted_import_of_the_service() -> None:
    planted = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..service import MemoryService\n"
    assert SERVICE in imported_modules(planted, "claude_code_memory.memories.read_model")
    assert SERVICE in imported_modules("from .. import service\n", "claude_code_memory.memories.hygiene")
    assert SERVICE not in imported_modules(
        "from .reads import Reads\n", "claude_code_memory.memories.read_model"
    )
