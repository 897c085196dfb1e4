"""install.sh compiles the package and then checks that every module has bytecode Python will use
(the check itself is a Python snippet inside install.sh; these run that very snippet)."""

from __future__ import annotations

import importlib.util
import py_compile
import re
from collections.abc import Callable
from pathlib import Path

import pytest

INSTALL_SH = Path(__file__).resolve().parent.parent / "install.sh"


def install_script() -> str:
    return INSTALL_SH.read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def stale_modules() -> Callable[[Path], list[str]]:
    """``stale_modules`` as install.sh defines it, taken from its ``<<'PYTHON'`` snippet."""
    [snippet] = re.findall(r"<<'PYTHON'\n(.*?)\nPYTHON\n", install_script(), re.S)
    namespace: dict[str, object] = {"__name__": "install_sh_snippet"}
    exec(compile(snippet, f"{INSTALL_SH}:PYTHON", "exec"), namespace)
    return namespace["stale_modules"]  # type: ignore[return-value]


def test_install_compiles_the_package_then_checks_its_bytecode() -> None:
    script = install_script()
    compile_step = script.index("-m compileall -q claude_code_memory")
    check_step = script.index("- claude_code_memory <<'PYTHON'")
    first_run = script.index(".venv/bin/ccmem --help")
    assert compile_step < check_step < first_run
    assert '[[ -z $stale ]] || die "compileall left modules without fresh bytecode' in script


def compiled(source: Path) -> None:
    py_compile.compile(str(source), cfile=importlib.util.cache_from_source(str(source)), doraise=True)


def test_the_check_names_modules_without_fresh_bytecode(
    stale_modules: Callable[[Path], list[str]], tmp_path: Path
) -> None:
    package = tmp_path / "package"
    (package / "inner").mkdir(parents=True)
    kept, changed, never = package / "kept.py", package / "inner" / "changed.py", package / "never.py"
    for module in (kept, changed, never):
        module.write_text("VALUE = 1\n")
    assert stale_modules(package) == [str(changed), str(kept), str(never)]

    compiled(kept)
    compiled(changed)
    changed.write_text("VALUE = 22\n")  # a different size: the bytecode no longer matches
    assert stale_modules(package) == [str(changed), str(never)]


def test_hash_based_bytecode_counts_as_fresh(
    stale_modules: Callable[[Path], list[str]], tmp_path: Path
) -> None:
    module = tmp_path / "checked.py"
    module.write_text("VALUE = 1\n")
    py_compile.compile(
        str(module),
        cfile=importlib.util.cache_from_source(str(module)),
        invalidation_mode=py_compile.PycInvalidationMode.CHECKED_HASH,
        doraise=True,
    )
    assert stale_modules(tmp_path) == []
