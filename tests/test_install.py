"""install.sh compiles the package and then checks that every module has bytecode Python will use
(the check itself is a Python snippet inside install.sh; these run that very snippet)."""

from __future__ import annotations

import importlib.util
import py_compile
import re
import shutil
import subprocess
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


# -- the command on PATH, and the end-to-end tests' Node clients ---------------------------------


def run_link_command(home: Path, path: str) -> tuple[str, str]:
    """install.sh's ``link_command`` function, run alone; (shim, shim_dir) it sets."""
    [function] = re.findall(r"\nlink_command\(\) \{\n.*?\n\}\n", install_script(), re.S)
    checkout = home / "checkout"
    (checkout / ".venv" / "bin").mkdir(parents=True, exist_ok=True)
    (checkout / ".venv" / "bin" / "ccmem").touch()
    script = f'{function}\nshim=failed\nlink_command\nprintf "%s %s" "$shim" "$shim_dir"'
    done = subprocess.run(
        ["/bin/bash", "-c", script],
        cwd=checkout,
        env={"HOME": str(home), "PATH": path},
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    shim, shim_dir = done.stdout.split(" ", 1)
    return shim, shim_dir


@pytest.mark.integration  # runs bash
def test_install_makes_data_private_and_narrows_an_existing_one(tmp_path: Path) -> None:
    """install.sh's ``private_data_dir``, run alone: a new data/ and an older install's 0755 one
    both end 0700 (memories and token hashes are their owner's; the server narrows the rest)."""
    [function] = re.findall(r"\nprivate_data_dir\(\) \{\n.*?\n\}\n", install_script(), re.S)
    assert "\nprivate_data_dir\n" in install_script()
    fresh, older = tmp_path / "fresh", tmp_path / "older"
    fresh.mkdir()
    (older / "data").mkdir(parents=True, mode=0o755)
    (older / "data").chmod(0o755)
    for checkout in (fresh, older):
        subprocess.run(
            ["/bin/bash", "-c", f"umask 022\n{function}\nprivate_data_dir"],
            cwd=checkout,
            env={"PATH": "/usr/bin:/bin"},
            timeout=30,
            check=True,
        )
        assert (checkout / "data").stat().st_mode & 0o777 == 0o700, checkout


@pytest.mark.integration  # runs bash
def test_install_links_ccmem_into_the_users_bin_directory(tmp_path: Path) -> None:
    bin_dir = tmp_path / ".local" / "bin"
    assert run_link_command(tmp_path, f"/usr/bin:/bin:{bin_dir}") == ("on-path", str(bin_dir))
    assert (bin_dir / "ccmem").resolve() == (tmp_path / "checkout" / ".venv" / "bin" / "ccmem").resolve()
    home_bin = tmp_path / "bin"
    assert run_link_command(tmp_path, f"/usr/bin:/bin:{home_bin}") == ("on-path", str(home_bin))
    assert run_link_command(tmp_path, "/usr/bin:/bin") == ("off-path", str(bin_dir))
    (bin_dir / "ccmem").unlink()
    (bin_dir / "ccmem").write_text("#!/bin/sh\necho someone else's\n")
    assert run_link_command(tmp_path, f"/usr/bin:/bin:{bin_dir}")[0] == "kept"
    assert "someone else's" in (bin_dir / "ccmem").read_text()


@pytest.mark.integration  # runs bash
def test_install_dev_runs_the_node_clients_script_and_says_what_is_missing(tmp_path: Path) -> None:
    script = install_script()
    assert "bash tests/e2e/install.sh" in script and "3) node_clients=missing" in script
    e2e_script = INSTALL_SH.parent / "tests" / "e2e" / "install.sh"
    assert "npm ci --include=optional" in e2e_script.read_text()
    assert "node install.cjs" in e2e_script.read_text()  # as .ci/run did when npm skips it
    only_cat = tmp_path / "bin"
    only_cat.mkdir()
    (only_cat / "cat").symlink_to(shutil.which("cat"))
    done = subprocess.run(
        ["/bin/bash", str(e2e_script)],
        env={"PATH": str(only_cat), "HOME": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert done.returncode == 3, done.stderr
    assert "node was not found on PATH" in done.stderr
    assert "apt-get install nodejs npm" in done.stderr and 'pytest -m "not e2e"' in done.stderr


def test_a_missing_node_client_fails_rather_than_skips(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.support.processes import require_tool

    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.fail.Exception, match="install.sh --dev"):
        require_tool(tmp_path / "claude", "the Claude Code CLI; run ./install.sh --dev", required=True)
    with pytest.raises(pytest.skip.Exception):
        require_tool(tmp_path / "docker", "docker")


def test_readme_and_docs_call_the_command_ccmem() -> None:
    """One name everywhere: `ccmem` (install.sh puts it on PATH), never `.venv/bin/ccmem <command>`."""
    root = INSTALL_SH.parent
    pages = [root / "README.md", *sorted((root / "docs").glob("*.md"))]
    invocations = [
        f"{page.name}: {line.strip()}"
        for page in pages
        for line in page.read_text(encoding="utf-8").splitlines()
        if re.search(r"\.venv/bin/ccmem [a-z]", line)
    ]
    assert invocations == []
