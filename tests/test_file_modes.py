"""Memories, token hashes and logs are their owner's alone (engine/file_modes.py): the data and
state directories 0700 and what is in them 0600, on a fresh start and after an older install
left them readable. The checkout's install.sh is in test_install.py, the package's setup in
test_package.py."""

from __future__ import annotations

import os
import stat
import uuid
from pathlib import Path

import pytest

from claude_code_memory.engine.file_modes import private_dir, tighten
from claude_code_memory.stack import services as stack_services
from claude_code_memory.stack import user_setup
from tests.support.server import MemoryServer, add_memory


def mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


def readable_by_others(root: Path) -> list[str]:
    """Everything under ``root`` (itself too) with a group or other permission bit, keys aside
    (their loaders refuse them: tests/test_oauth.py, tests/test_exposure.py)."""
    found = [] if not mode(root) & 0o077 else [str(root)]
    for folder, folders, files in os.walk(root):
        for name in [*folders, *files]:
            path = Path(folder, name)
            if not path.is_symlink() and mode(path) & 0o077 and not name.endswith(".pem"):
                found.append(f"{path} {mode(path):o}")
    return found


def test_tighten_narrows_what_is_ours_and_names_what_is_not(tmp_path: Path) -> None:
    root = tmp_path / "data"
    (root / "mem0").mkdir(parents=True)
    root.chmod(0o755)
    (root / "mem0").chmod(0o755)
    database = root / "memory.db"
    database.write_bytes(b"")
    database.chmod(0o644)
    (root / "mem0" / "history.db").write_bytes(b"")
    (root / "mem0" / "history.db").chmod(0o664)
    key = root / "oauth-signing-key.pem"
    key.write_bytes(b"")
    key.chmod(0o644)  # refused where it is loaded, never quietly narrowed
    outside = tmp_path / "outside"
    outside.mkdir(mode=0o755)
    (root / "elsewhere").symlink_to(outside)  # not followed
    private = root / "private.db"
    private.write_bytes(b"")
    private.chmod(0o600)

    found = tighten(root)
    assert {mode(p) for p in (root, root / "mem0")} == {0o700}
    assert mode(database) == mode(root / "mem0" / "history.db") == mode(private) == 0o600
    assert mode(key) == 0o644 and mode(outside) == 0o755
    assert sorted(found.narrowed) == sorted([root, root / "mem0", database, root / "mem0" / "history.db"])
    assert found.foreign == [] and "made them readable by their owner only" in found.warnings()[0]
    assert tighten(root).warnings() == []  # nothing left to say


@pytest.mark.skipif(os.geteuid() != 0, reason="only root can give a file to another account")
def test_a_file_of_another_account_is_named_with_the_command_that_fixes_it(tmp_path: Path) -> None:
    root = tmp_path / "data"
    root.mkdir(mode=0o700)
    theirs = root / "theirs.db"
    theirs.write_bytes(b"")
    theirs.chmod(0o644)
    os.chown(theirs, 54321, 54321)
    found = tighten(root)
    assert found.foreign == [theirs] and mode(theirs) == 0o644
    [line] = found.warnings()
    assert str(theirs) in line and f"chmod -R go-rwx {root}" in line


def test_private_dirs_and_logs_whatever_the_umask(tmp_path: Path) -> None:
    before = os.umask(0o022)
    try:
        existing = tmp_path / "state" / "logs"
        existing.mkdir(parents=True, mode=0o755)
        stack_services.private_dir(existing)
        private_dir(tmp_path / "new" / "data")
        with stack_services.open_log(existing / "stack.log") as log:
            log.write(b"started\n")
    finally:
        os.umask(before)
    assert mode(existing) == mode(tmp_path / "new" / "data") == 0o700
    assert mode(existing / "stack.log") == 0o600


@pytest.mark.integration  # ccmem serve, as a user runs it
def test_serve_keeps_a_fresh_data_dir_private_and_narrows_one_an_older_install_left_open(
    tmp_path: Path,
) -> None:
    data = tmp_path / "data"
    data.mkdir(mode=0o755)  # as `mkdir data`, or a checkout's data/, leaves it
    with MemoryServer(tmp_path, data_dir=data) as server:
        token = server.make_token(f"ada-{uuid.uuid4().hex[:6]}")
        add_memory(server, token, "Ada's deploy key rotates every ninety days")
        assert mode(data) == 0o700
        for name in ("memory.db", "memory.db-wal", "mem0/history.db"):
            assert mode(data / name) == 0o600, name
        assert readable_by_others(data) == [], server.log()
        # An older install's modes: everything readable by every account.
        for folder, folders, files in os.walk(data):
            for name in folders:
                Path(folder, name).chmod(0o755)
            for name in files:
                if not name.endswith(".pem"):
                    Path(folder, name).chmod(0o644)
        data.chmod(0o755)
        server.restart()
        assert readable_by_others(data) == []
        assert "made them readable by their owner only" in server.log(), server.log()


@pytest.mark.integration  # ccmem serve on the directories ccmem setup made
def test_the_package_route_s_directories_and_files_are_private(tmp_path: Path) -> None:
    home = tmp_path / "home"
    environ = {"HOME": str(home), "XDG_DATA_HOME": str(home / "xdg-data")}
    report = user_setup.setup(environ, model=False)
    assert {mode(p) for p in (report.config_dir, report.data_dir, report.state_dir)} == {0o700}
    assert mode(report.env_file) == 0o600
    with MemoryServer(tmp_path / "work", data_dir=report.data_dir) as server:
        token = server.make_token(f"bea-{uuid.uuid4().hex[:6]}")
        add_memory(server, token, "Bea's builds run on the arm64 runners")
        assert mode(report.data_dir / "memory.db") == 0o600
        assert readable_by_others(report.data_dir) == [], server.log()
