"""Layering, checked by parsing imports: layers look down only, along the table the
architecture page shows.

``docs/architecture.md`` holds the table of which layer may import which ("Who may import
whom"); these tests read it from the page, so the page and the code cannot drift apart. Every
import counts: at module level, inside a function, under ``TYPE_CHECKING``. Besides the table:
no import cycle among the package's modules, no module reaching into another module's
``_private`` names, edges that never import the engine or the database, ``MemoryState`` imported
from one module only, the modules the capture proxy shares on the standard library only, a package
root of ``__init__.py``, ``errors.py`` and folders, no module over 600 lines, and no plain
function over ten parameters (routes, commands and tools aside: their parameters are their interface). Each
checker is also run on planted violations, so a checker that sees nothing cannot pass.
"""

from __future__ import annotations

import ast
import re
import sys
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "claude_code_memory"
ARCHITECTURE_PAGE = PACKAGE.parent / "docs" / "architecture.md"
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


# -- the package's modules and the imports between them ----------------------------------------


@dataclass(frozen=True)
class Module:
    name: str  # dotted: claude_code_memory.search.pipeline
    source: str
    is_package: bool  # an __init__.py: its relative imports start from itself


def package_modules(root: Path = PACKAGE) -> dict[str, Module]:
    modules = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        name = ".".join(parts[:-1] if is_package else parts)
        modules[name] = Module(name, path.read_text(), is_package)
    return modules


def _module_name(path: Path) -> str:
    return ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts).removesuffix(".__init__")


def _from_base(module: Module, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    parts = module.name.split(".")
    if not module.is_package:
        parts = parts[:-1]
    parts = parts[: len(parts) - (node.level - 1)]
    return ".".join(parts + ([node.module] if node.module else []))


def _known_prefix(name: str, known: Collection[str]) -> str | None:
    while name and name not in known:
        name = name.rpartition(".")[0]
    return name or None


def package_imports(module: Module, known: Collection[str]) -> set[str]:
    """The modules of ``known`` that ``module`` imports, wherever the import statement is. A
    ``from`` import of a submodule is an import of that submodule; of any other name, of the
    module that defines it (``from . import app`` in ``cli/stack.py`` imports ``cli``)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(module.source)):
        if isinstance(node, ast.Import):
            found |= {target for alias in node.names if (target := _known_prefix(alias.name, known))}
        elif isinstance(node, ast.ImportFrom):
            base = _from_base(module, node)
            for alias in node.names:
                target = f"{base}.{alias.name}"
                found.add(target if target in known else (_known_prefix(base, known) or ""))
    return found - {"", module.name}


def import_graph(modules: Mapping[str, Module]) -> dict[str, set[str]]:
    return {name: package_imports(module, modules.keys()) for name, module in modules.items()}


def import_cycles(graph: Mapping[str, Collection[str]]) -> list[list[str]]:
    """The import cycles: each group of modules that reach each other (a strongly connected
    component of two or more), found by Tarjan's algorithm."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(name: str) -> None:
        index[name] = low[name] = len(index)
        stack.append(name)
        on_stack.add(name)
        for target in sorted(graph.get(name, ())):
            if target not in index:
                visit(target)
                low[name] = min(low[name], low[target])
            elif target in on_stack:
                low[name] = min(low[name], index[target])
        if low[name] == index[name]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == name:
                    break
            if len(group) > 1:
                cycles.append(sorted(group))

    for name in sorted(graph):
        if name not in index:
            visit(name)
    return sorted(cycles)


def _planted(sources: Mapping[str, str]) -> dict[str, Module]:
    """Modules from sources keyed by file path (``pkg/__init__.py``, ``pkg/a.py``)."""
    modules = {}
    for path, source in sources.items():
        parts = path.removesuffix(".py").split("/")
        is_package = parts[-1] == "__init__"
        name = ".".join(parts[:-1] if is_package else parts)
        modules[name] = Module(name, source, is_package)
    return modules


def test_the_package_has_no_import_cycle() -> None:
    graph = import_graph(package_modules())
    assert len(graph) >= 150, "package modules not found"
    assert sum(map(len, graph.values())) >= 500, "the checker resolves almost no import"
    assert import_cycles(graph) == []


def test_the_cycle_checker_finds_cycles_however_the_import_is_written() -> None:
    modules = _planted(
        {
            "pkg/__init__.py": "",
            "pkg/writes.py": "from .batch import BatchWrite\n",
            # inside a function: still a cycle (the first call imports it)
            "pkg/batch.py": "def add():\n    from .writes import same_text\n",
            "pkg/engine/__init__.py": "",
            # under TYPE_CHECKING: still a cycle (the type checker follows it)
            "pkg/engine/store.py": "from . import build\n",
            "pkg/engine/build.py": (
                "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .store import Store\n"
            ),
            "pkg/cli/__init__.py": "from . import stack\napp = None\n",
            "pkg/cli/stack.py": "def names():\n    from . import app\n",  # a name of the package
            "pkg/cli/common.py": "import pkg.cli.stack\n",  # one way: no cycle
            "pkg/search/__init__.py": "",
            "pkg/search/pipeline.py": "from ..engine.store import Store\nfrom ..engine import build\n",
        }
    )
    graph = import_graph(modules)
    assert graph["pkg.cli.common"] == {"pkg.cli.stack"}
    assert graph["pkg.search.pipeline"] == {"pkg.engine.store", "pkg.engine.build"}
    assert import_cycles(graph) == [
        ["pkg.batch", "pkg.writes"],
        ["pkg.cli", "pkg.cli.stack"],
        ["pkg.engine.build", "pkg.engine.store"],
    ]
    assert import_cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert import_cycles({"a": {"b"}, "b": set()}) == []


# -- private names ------------------------------------------------------------------------------

#: Names with a leading underscore that are a library's public API (named tuples, SQLAlchemy rows).
PUBLIC_UNDERSCORE_NAMES = {"_asdict", "_replace", "_fields", "_make", "_mapping"}

#: A library's private attributes we rely on, by module: each a deliberate reach, with its reason.
LIBRARY_PRIVATES = {
    # mem0's history database is one sqlite3 connection behind mem0's own lock; our statements
    # on it (WAL mode, the purge of deleted texts, text look-ups) must hold the same lock.
    "engine/factory.py": {
        "memory.db._lock",
        "history._lock",
        # mem0 closes its graph/entity store nowhere; the engine closes it with the vector store.
        "memory._entity_store",
        # mem0's qdrant store builds its filter here; a count must filter the same way.
        "store._create_filter",
    },
    "store/vectors.py": {"history._lock"},
    "memories/lifecycle/erasure.py": {"history._lock"},
    # The MCP SDK's FastMCP serves Streamable HTTP through its low-level server only.
    "mcp/transport.py": {"server._lowlevel_server"},
}


def _is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _defined_names(tree: ast.AST) -> set[str]:
    """Every name a module defines: functions, classes, assigned names and attributes
    (``self._lock = ...``), arguments, import aliases."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            names.add(node.attr)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, ast.alias):
            names.add(node.asname or node.name)
    return names


def private_reaches(source: str) -> list[str]:
    """Where ``source`` uses a ``_private`` name it does not define: imported from another
    module (``from .writes import _same_text``), or read off an object or a module
    (``writes._row_values``, ``values._clean``). ``self._x`` and ``cls._x`` are the class's own."""
    tree = ast.parse(source)
    defined = _defined_names(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module != "__future__":
            found += [
                f"from {'.' * node.level}{node.module or ''} import {alias.name}"
                for alias in node.names
                if _is_private(alias.name)
            ]
        elif isinstance(node, ast.Import):
            found += [f"import {a.name}" for a in node.names if any(map(_is_private, a.name.split(".")))]
        elif (
            isinstance(node, ast.Attribute)
            and _is_private(node.attr)
            and node.attr not in PUBLIC_UNDERSCORE_NAMES
            and node.attr not in defined
            and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"))
        ):
            found.append(ast.unparse(node))
    return found


def test_no_module_reaches_into_another_modules_private_names() -> None:
    reaches = {
        str(path.relative_to(PACKAGE)): found
        for path in sorted(PACKAGE.rglob("*.py"))
        if (found := set(private_reaches(path.read_text())))
    }
    assert reaches == LIBRARY_PRIVATES


def test_the_private_name_checker_sees_every_way_in() -> None:
    planted = """
from .writes import _same_text
from ..store import values as store_values
import pkg._internal
from . import _helpers

class BatchWrite:
    def __init__(self, writes):
        self.writes = writes
        self._items = []

    def add(self, other):
        w = self.writes
        w._facts(None)
        self.writes._row_values()
        other._items.clear()          # this module's own class: allowed
        self._items.append(1)         # its own: allowed
        return store_values._clean("x"), row._asdict()
"""
    assert sorted(private_reaches(planted)) == sorted(
        [
            "from .writes import _same_text",
            "import pkg._internal",
            "from . import _helpers",
            "w._facts",
            "self.writes._row_values",
            "store_values._clean",
        ]
    )
    assert (
        private_reaches("from __future__ import annotations\nclass A:\n    def __repr__(self): ...\n") == []
    )


# -- the allowed-imports table, read from the architecture page ----------------------------------

TABLE_HEADING = "### Who may import whom"
NAME = re.compile(r"`([^`]+)`")


@dataclass(frozen=True)
class Layer:
    may_import: frozenset[str]  # layers: "search/", "errors.py"
    standard_library_only: bool


def allowed_imports(page: str) -> dict[str, Layer]:
    """The table under :data:`TABLE_HEADING`: a row per layer (a folder ``api/`` or a root
    module ``errors.py``), the layers it may import, and whether it uses the standard library
    only."""
    _, found, rest = page.partition(TABLE_HEADING)
    assert found, f"{TABLE_HEADING!r} not found on the architecture page"
    layers: dict[str, Layer] = {}
    for line in rest.splitlines():
        if line.startswith("#"):
            break
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if not line.startswith("|") or len(cells) != 3 or not cells[0].startswith("`"):
            continue
        [layer] = NAME.findall(cells[0])
        layers[layer] = Layer(frozenset(NAME.findall(cells[1])), "standard library only" in cells[2])
    return layers


def layer_of(module: str) -> str:
    """``claude_code_memory.search.pipeline`` is in ``search/``; ``claude_code_memory.errors``
    is ``errors.py``; the package's own ``__init__`` is ``__init__.py``."""
    parts = module.split(".")
    if len(parts) == 1:
        return "__init__.py"
    if len(parts) == 2 and (PACKAGE / f"{parts[1]}.py").exists():
        return f"{parts[1]}.py"
    return f"{parts[1]}/"


def layer_violations(graph: Mapping[str, Collection[str]], table: Mapping[str, Layer]) -> list[str]:
    return sorted(
        f"{module} ({layer_of(module)}) imports {target} ({layer_of(target)})"
        for module, targets in graph.items()
        for target in targets
        if layer_of(target) != layer_of(module) and layer_of(target) not in table[layer_of(module)].may_import
    )


def _table() -> dict[str, Layer]:
    return allowed_imports(ARCHITECTURE_PAGE.read_text())


def test_every_import_follows_the_architecture_pages_table() -> None:
    assert layer_violations(import_graph(package_modules()), _table()) == []


def test_the_table_names_the_layers_the_issue_asked_for() -> None:
    table = _table()
    assert "memories/" not in table["search/"].may_import  # retrieval is below the service
    assert "engine/" not in table["cli/"].may_import and "db/" not in table["cli/"].may_import
    assert table["policy/"] == Layer(frozenset({"errors.py"}), standard_library_only=True)
    assert table["capture/"] == Layer(frozenset(), standard_library_only=True)
    for edge in ("api/", "mcp/", "cli/", "ui/"):
        assert not table[edge].may_import & {"engine/", "db/"}, edge
    for below in (
        "store/",
        "search/",
        "engine/",
        "db/",
        "auth/",
        "policy/",
        "config/",
        "domain/",
        "rate_limits/",
    ):
        assert not table[below].may_import & {"api/", "mcp/", "cli/", "ui/", "memories/"}, below
    assert "search/" not in table["store/"].may_import and "memories/" not in table["engine/"].may_import


def test_the_table_checker_reads_the_page_and_catches_an_arrow_up() -> None:
    page = """
### Who may import whom

| layer | may import (of this package) | other packages |
|---|---|---|
| `search/` | `store/` `errors.py` | SQLAlchemy; never `memories/` |
| `memories/` | `search/` `store/` | SQLAlchemy |
| `store/` | nothing | standard library only |
| `errors.py` | nothing | standard library only |

## The next section
| `api/` | `memories/` | not the table any more |
"""
    table = allowed_imports(page)
    assert table == {
        "search/": Layer(frozenset({"store/", "errors.py"}), False),
        "memories/": Layer(frozenset({"search/", "store/"}), False),
        "store/": Layer(frozenset(), True),
        "errors.py": Layer(frozenset(), True),
    }
    graph = {
        "claude_code_memory.search.pipeline": {
            "claude_code_memory.store.values",
            "claude_code_memory.search.ranking",  # its own layer
            "claude_code_memory.memories.write.writes",  # an arrow up
        },
        "claude_code_memory.store.values": {"claude_code_memory.errors"},  # not in its row
        "claude_code_memory.memories.service": {"claude_code_memory.search.pipeline"},
        "claude_code_memory.search.ranking": set(),
        "claude_code_memory.memories.write.writes": set(),
        "claude_code_memory.errors": set(),
    }
    assert layer_violations(graph, table) == [
        "claude_code_memory.search.pipeline (search/) imports "
        "claude_code_memory.memories.write.writes (memories/)",
        "claude_code_memory.store.values (store/) imports claude_code_memory.errors (errors.py)",
    ]
    assert layer_of("claude_code_memory") == "__init__.py"
    assert layer_of("claude_code_memory.errors") == "errors.py"
    assert layer_of("claude_code_memory.config") == "config/"
    assert layer_of("claude_code_memory.config.locations") == "config/"
    assert layer_of("claude_code_memory.domain.memory_state") == "domain/"
    assert layer_of("claude_code_memory.cli") == "cli/"


def test_layers_on_the_standard_library_only_import_nothing_else() -> None:
    standard_only = {name for name, layer in _table().items() if layer.standard_library_only}
    assert {"policy/", "capture/", "errors.py", "domain/"} <= standard_only
    offenders = {
        f"{path.relative_to(PACKAGE)}: {name}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if layer_of(_module_name(path)) in standard_only
        for name in _imports(path)
        if name.split(".")[0] not in sys.stdlib_module_names and name.split(".")[0] != "claude_code_memory"
    }
    assert offenders == set()


# -- edges, the database and the engine ---------------------------------------------------------


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


def database_reexports(source: str, module_path: Path) -> list[str]:
    """Names ``source`` re-exports from the database layer (``from ..db.models import X as X``):
    a way round the edges' database ban, as ``store/values.py`` once handed out ``MemoryState``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            [module] = _imports_in(ast.unparse(node), module_path)
            if module == DATABASE or module.startswith(DATABASE + "."):
                found += [alias.name for alias in node.names if alias.asname == alias.name]
    return found


def test_no_module_outside_the_database_hands_on_its_names() -> None:
    offenders = {
        str(path.relative_to(PACKAGE)): found
        for path in sorted(PACKAGE.rglob("*.py"))
        if path.relative_to(PACKAGE).parts[0] != "db"
        and (found := database_reexports(path.read_text(), path.relative_to(PACKAGE.parent)))
    }
    assert offenders == {}
    values = Path("claude_code_memory/store/values.py")
    planted = "from ..db.models import Memory\nfrom ..db.models import MemoryState as MemoryState\n"
    assert database_reexports(planted, values) == ["MemoryState"]
    assert database_reexports("from ..domain.memory_state import MemoryState as MemoryState\n", values) == []


MEMORY_STATE = "claude_code_memory.domain.memory_state"
#: Where ``MemoryState`` is imported: the package, its tests and the benchmarks.
MEMORY_STATE_USERS = [
    *sorted(PACKAGE.rglob("*.py")),
    *sorted((PACKAGE.parent / "tests").rglob("*.py")),
    *sorted((PACKAGE.parent / "bench").rglob("*.py")),
    PACKAGE.parent / "test_integration.py",
]


def memory_state_doors(source: str, module_path: Path) -> list[str]:
    """The modules of this package other than :data:`MEMORY_STATE` that ``source`` takes
    ``MemoryState`` from: a ``from`` import of it, or the name read off a module
    (``models.MemoryState``)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and any(alias.name == "MemoryState" for alias in node.names):
            [module] = _imports_in(ast.unparse(node), module_path)
            if module.startswith("claude_code_memory") and module != MEMORY_STATE:
                found.append(module)
        elif isinstance(node, ast.Attribute) and node.attr == "MemoryState":
            found.append(ast.unparse(node.value))
    return found


def test_memory_state_is_imported_through_one_door() -> None:
    # The enum is in a module of its own so that every layer, the edges too, names it from the
    # same place; a second door (the models, the store's values) would hand edges the database.
    assert len(MEMORY_STATE_USERS) >= 300, "modules not found"
    offenders = {
        str(path.relative_to(PACKAGE.parent)): found
        for path in MEMORY_STATE_USERS
        if "MemoryState" in (source := path.read_text())
        and (found := memory_state_doors(source, path.relative_to(PACKAGE.parent)))
    }
    assert offenders == {}


def test_the_door_check_sees_every_other_way_in() -> None:
    route = Path("claude_code_memory/api/routes/planted.py")
    for source in (
        "from ...store.values import DEFAULT_APP, MemoryState",
        "from claude_code_memory.db.models import Memory, MemoryState",
        "def f():\n    from ...db.models import MemoryState as State\n",
        "from ...db import models\nstate = models.MemoryState.active\n",
    ):
        assert memory_state_doors(source, route), source
    assert memory_state_doors("from ...domain.memory_state import MemoryState", route) == []
    # OpenMemory's own enum in a test's fake database is another class, not this package's.
    test = Path("tests/test_openmemory.py")
    assert memory_state_doors("from .support.openmemory_db import MemoryState", test) == []


# The capture proxy imports these modules in its own virtualenv, where only mitmproxy and the
# standard library exist.
PROXY_SHARED = [
    PACKAGE / "__init__.py",
    *sorted((PACKAGE / "capture").rglob("*.py")),
    PACKAGE / "policy" / "__init__.py",
    *sorted((PACKAGE / "policy" / "redact").rglob("*.py")),
]


def test_modules_the_proxy_imports_use_only_the_standard_library() -> None:
    assert len(PROXY_SHARED) >= 15, "capture or redaction modules not found"
    offenders = {
        str(path.relative_to(PACKAGE)): name
        for path in PROXY_SHARED
        for name in _imports(path)
        if name.split(".")[0] not in sys.stdlib_module_names
        and name not in {"claude_code_memory", "claude_code_memory.capture", "claude_code_memory.policy"}
        and name != "claude_code_memory.policy.redact"
        and not name.startswith(("claude_code_memory.capture.", "claude_code_memory.policy.redact."))
    }
    assert offenders == {}


# -- the package's shape ------------------------------------------------------------------------


def test_the_package_root_holds_only_what_the_architecture_page_names() -> None:
    # The root holds the version and the typed errors; every other module is in a folder named
    # for what it owns (the settings too: config/), each folder a row of the table.
    table = _table()
    modules = {path.name for path in PACKAGE.glob("*.py")}
    folders = {f"{path.name}/" for path in PACKAGE.iterdir() if (path / "__init__.py").exists()}
    assert modules == {"__init__.py", "errors.py"}
    assert modules == {name for name in table if name.endswith(".py")}
    assert folders == {name for name in table if name.endswith("/")}
    assert {"api/", "mcp/", "cli/", "ui/", "memories/", "search/", "store/", "policy/", "engine/"} <= folders
    assert "config/" in folders


def test_memories_is_feature_packages_with_few_modules_at_its_top() -> None:
    top = sorted(path.name for path in (PACKAGE / "memories").glob("*.py"))
    assert len(top) <= 12, top
    features = {path.name for path in (PACKAGE / "memories").iterdir() if (path / "__init__.py").exists()}
    assert {"write", "lifecycle", "recall", "read_model"} <= features


def test_no_module_outgrows_one_noun() -> None:
    # Split a module when it picks up a second noun.
    sizes = {
        str(path.relative_to(PACKAGE)): len(path.read_text().splitlines()) for path in PACKAGE.rglob("*.py")
    }
    assert {name: lines for name, lines in sizes.items() if lines > 600} == {}


# -- parameters ---------------------------------------------------------------------------------

#: Most parameters of a plain function, ``self`` and ``cls`` aside. Past them, the parameters
#: that travel together are a value: a frozen dataclass (``search/request.py``'s
#: ``SearchRequest``), or a ``TypedDict`` of keyword arguments (``memories/write/arguments.py``).
MAX_PARAMETERS = 10
#: The layers whose routes, commands and tools are an interface: their parameters are what a
#: client sends (a query string, command-line options, a tool's arguments), so they stay many.
INTERFACE_LAYERS = ("api", "mcp", "cli", "ui")
#: What registers a function as a route (FastAPI), a command (Typer) or a tool (the MCP SDK):
#: ``@router.get(...)``, ``@app.command(...)``, ``@server.tool(...)`` over it, or called with
#: it, ``app.command()(retention.forget)``, ``server.tool(...)(hiding(search_memory))``.
REGISTRARS = frozenset(
    {"get", "post", "put", "patch", "delete", "api_route", "websocket", "command", "callback", "tool"}
)


def parameter_count(function: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """Its parameters, ``*args`` and ``**kwargs`` each one, a method's ``self`` or ``cls`` none."""
    arguments = function.args
    names = [a.arg for a in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs)]
    names += [a.arg for a in (arguments.vararg, arguments.kwarg) if a is not None]
    return len(names) - (1 if names[:1] in (["self"], ["cls"]) else 0)


def _registers(node: ast.expr) -> bool:
    """Whether ``node`` is a call of a registrar: ``router.get("/x")``, ``app.command()``."""
    function = node.func if isinstance(node, ast.Call) else None
    return isinstance(function, ast.Attribute) and function.attr in REGISTRARS


def registered_by_call(tree: ast.AST) -> set[str]:
    """The names of the functions ``tree`` registers by calling a registrar's result with them,
    through a wrapper or not: ``app.command()(retention.forget)`` registers ``forget``."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _registers(node.func) and node.args:
            target = node.args[0]
            while isinstance(target, ast.Call) and target.args:  # hiding(search_memory, "now")
                target = target.args[0]
            if isinstance(target, ast.Name):
                names.add(target.id)
            elif isinstance(target, ast.Attribute):
                names.add(target.attr)
    return names


def long_functions(sources: Mapping[str, str]) -> list[str]:
    """``path:line name (count)`` for each function of ``sources`` (by path from the package,
    ``search/pipeline.py``) with more than :data:`MAX_PARAMETERS` parameters, the routes,
    commands and tools of :data:`INTERFACE_LAYERS` aside."""
    trees = {path: ast.parse(source) for path, source in sources.items()}
    interface = {path for path in trees if path.split("/")[0] in INTERFACE_LAYERS}
    registered = set().union(*(registered_by_call(trees[path]) for path in interface))
    found = []
    for path, tree in trees.items():
        for node in ast.walk(tree):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            count = parameter_count(node)
            if count <= MAX_PARAMETERS:
                continue
            if path in interface and (
                any(_registers(decorator) for decorator in node.decorator_list) or node.name in registered
            ):
                continue
            found.append(f"{path}:{node.lineno} {node.name} ({count})")
    return sorted(found)


def test_no_plain_function_takes_more_than_ten_parameters() -> None:
    sources = {str(path.relative_to(PACKAGE)): path.read_text() for path in sorted(PACKAGE.rglob("*.py"))}
    assert len(sources) >= 150, "package modules not found"
    assert long_functions(sources) == []


def test_the_parameter_check_tells_plain_functions_from_routes_commands_and_tools() -> None:
    eleven = ", ".join(f"p{n}" for n in range(11))
    ten = ", ".join(f"p{n}" for n in range(10))
    sources = {
        "search/pipeline.py": (
            f"def search({eleven}): ...\n"  # too many
            f"class Search:\n    def run(self, {ten}): ...\n"  # self aside: ten
            f"    def hits(self, {ten}, *rest): ...\n"  # *rest counts
            f"def fits({ten}): ...\n"
            f"@router.get('/x')\ndef not_a_route({eleven}): ...\n"  # a route's decorator, below the edges
        ),
        "api/routes/memories.py": (
            f"@router.get('')\nasync def list_memories({eleven}): ...\n"
            f"def _list({eleven}): ...\n"  # the route's helper is a plain function
        ),
        "cli/retention.py": f"def forget({eleven}): ...\n",
        "cli/__init__.py": "from . import retention\napp.command()(retention.forget)\n",
        "mcp/memoryos_tools.py": (
            f"def tools(server):\n    async def retrieve_context({eleven}): ...\n"
            "    server.tool(description='x')(hiding(retrieve_context, 'now'))\n"
        ),
        "ui/memories.py": f"@app.command('x')\ndef shown(*, {eleven}, **more): ...\n",
    }
    assert long_functions(sources) == [
        "api/routes/memories.py:3 _list (11)",
        "search/pipeline.py:1 search (11)",
        "search/pipeline.py:4 hits (11)",
        "search/pipeline.py:7 not_a_route (11)",
    ]
