"""What install.sh leaves behind that the tests would not notice otherwise."""

from __future__ import annotations

import importlib.util
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "claude_code_memory"


def _fresh_bytecode(source: Path) -> bool:
    """True when the module's cached bytecode exists and matches its source (what Python checks
    before it uses a .pyc: the source's mtime and size in the header)."""
    cached = Path(importlib.util.cache_from_source(str(source)))
    if not cached.exists():
        return False
    header = cached.read_bytes()[:16]
    if int.from_bytes(header[4:8], "little") != 0:  # hash-based .pyc: checked by content
        return True
    stat = source.stat()
    mtime, size = int.from_bytes(header[8:12], "little"), int.from_bytes(header[12:16], "little")
    return mtime == int(stat.st_mtime) & 0xFFFFFFFF and size == stat.st_size & 0xFFFFFFFF


def test_every_module_of_the_package_has_fresh_bytecode() -> None:
    # Where Python may not write bytecode (PYTHONDONTWRITEBYTECODE, as in our Docker image and on
    # the build machines) a module without it is compiled again at every start.
    sources = sorted(PACKAGE.rglob("*.py"))
    assert len(sources) > 50, "package sources not found"
    stale = [str(path.relative_to(PACKAGE)) for path in sources if not _fresh_bytecode(path)]
    assert stale == [], "run ./install.sh (it compiles the package)"


def test_the_check_sees_a_module_without_bytecode(tmp_path: Path) -> None:
    module = tmp_path / "lonely.py"
    module.write_text("VALUE = 1\n")
    assert not _fresh_bytecode(module)
    import py_compile

    py_compile.compile(str(module), cfile=importlib.util.cache_from_source(str(module)))
    assert _fresh_bytecode(module)
    module.write_text("VALUE = 22\n")  # a different size: the bytecode is stale
    assert not _fresh_bytecode(module)
