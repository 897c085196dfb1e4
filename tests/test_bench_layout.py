"""The bench package stays one a newcomer can find their way in: folders by question, a row of
bench/README.md for every module, every script runnable as ``python -m bench.<folder>.<name>``,
no import cycle, and no ``sys.path`` edits in bench/ or tests/ (both are imported as packages
from the repository root)."""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"
FOLDERS = ("perf", "quality", "faults", "harness")
#: At most this many modules directly in bench/ (bench/__init__.py counts).
MAX_TOP_LEVEL = 10


def modules() -> dict[str, Path]:
    """Every module under bench/ but the packages' ``__init__``: dotted name -> file."""
    return {
        ".".join(path.relative_to(ROOT).with_suffix("").parts): path
        for path in sorted(BENCH.rglob("*.py"))
        if path.name != "__init__.py"
    }


def scripts() -> list[str]:
    """The modules that run as a script (``if __name__ == "__main__"``)."""
    return [name for name, path in modules().items() if '__name__ == "__main__"' in path.read_text()]


def python_files(folder: Path) -> list[Path]:
    return [path for path in folder.rglob("*.py") if "node_modules" not in path.parts]


def test_bench_is_a_package_of_folders_by_question_with_at_most_ten_modules_on_top() -> None:
    top = sorted(path.name for path in BENCH.glob("*.py"))
    assert len(top) <= MAX_TOP_LEVEL, top
    for folder in ("", *FOLDERS):
        init = BENCH / folder / "__init__.py"
        assert init.is_file(), init
        assert ast.get_docstring(ast.parse(init.read_text())), f"{init} says what the folder answers"
    assert {path.parent.name for path in modules().values()} <= set(FOLDERS)
    assert (ROOT / "tests" / "__init__.py").is_file()
    assert (ROOT / "tests" / "support" / "__init__.py").is_file()


def test_the_readme_has_a_row_for_every_module_and_the_command_of_every_script() -> None:
    readme = (BENCH / "README.md").read_text()
    rows = [line for line in readme.splitlines() if re.match(r"\| \[`[\w/]+\.py`\]", line)]
    listed = {m.group(1) for line in rows if (m := re.match(r"\| \[`([\w/]+\.py)`\]\(\1\)", line))}
    on_disk = {str(path.relative_to(BENCH)) for path in modules().values()}
    assert listed == on_disk, {"missing": sorted(on_disk - listed), "gone": sorted(listed - on_disk)}
    for name in scripts():
        file = name.removeprefix("bench.").replace(".", "/") + ".py"
        row = next(line for line in rows if line.startswith(f"| [`{file}`]"))
        assert f"`python -m {name}`" in row, row
    for line in rows:  # a results pattern names files that exist
        for pattern in re.findall(r"`([\w*.-]+\.json)`", line.split(" | ")[3]):
            assert list((BENCH / "results").glob(pattern)), (pattern, line)


def _imports(path: Path, package: str) -> set[str]:
    """The bench modules ``path`` imports, at any depth of its code."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("bench."):
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name.startswith("bench."))
    return found & (set(modules()) - {package})


def test_the_bench_modules_import_each_other_without_a_cycle() -> None:
    graph = {name: _imports(path, name) for name, path in modules().items()}
    done: set[str] = set()

    def visit(name: str, trail: list[str]) -> None:
        if name in trail:
            raise AssertionError("import cycle: " + " -> ".join([*trail[trail.index(name) :], name]))
        if name in done:
            return
        for imported in sorted(graph[name]):
            visit(imported, [*trail, name])
        done.add(name)

    for name in graph:
        visit(name, [])
    # The server benchmark fills large stores with the bulk loader; what both need is in harness/.
    assert "bench.perf.server" not in graph["bench.harness.bulk_load"]


#: ``sys.path`` changed in code (``sys.path.insert(…)``, ``sys.path = …``), also inside a string
#: handed to another interpreter.
_EDIT = re.compile(r"\bsys\.path\s*(?:\.\s*(?:insert|append|extend)\s*\(|\+?=)")


def test_nothing_in_bench_or_tests_edits_sys_path() -> None:
    offenders = []
    for path in python_files(BENCH) + python_files(ROOT / "tests"):
        if path == Path(__file__).resolve():
            continue
        text = path.read_text(errors="replace")
        for node in ast.walk(ast.parse(text)):
            if (
                isinstance(node, ast.Attribute)
                and node.attr == "path"
                and isinstance(node.value, ast.Name)
                and node.value.id == "sys"
            ):
                offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}")
        offenders += [f"{path.relative_to(ROOT)}: {m.group(0)}" for m in _EDIT.finditer(text)]
    assert offenders == []


@pytest.mark.integration  # one interpreter of its own runs every script's --help
def test_every_script_answers_help_as_a_module_from_the_repository_root() -> None:
    driver = (
        "import contextlib, io, json, runpy, sys\n"
        "failed = {}\n"
        "for name in json.loads(sys.argv[1]):\n"
        "    sys.argv = [name, '--help']\n"
        "    out = io.StringIO()\n"
        "    try:\n"
        "        with contextlib.redirect_stdout(out):\n"
        "            runpy.run_module(name, run_name='__main__', alter_sys=True)\n"
        "        failed[name] = 'no usage printed'\n"
        "    except SystemExit as exit:\n"
        "        if exit.code not in (0, None) or 'usage:' not in out.getvalue():\n"
        "            failed[name] = f'exit {exit.code}: {out.getvalue()[-300:]}'\n"
        "    except BaseException as error:\n"
        "        failed[name] = f'{type(error).__name__}: {error}'\n"
        "print(json.dumps(failed))\n"
    )
    names = scripts()
    assert len(names) >= 40, names
    done = subprocess.run(
        [sys.executable, "-c", driver, json.dumps(names)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=280,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout.splitlines()[-1]) == {}
