"""Fault check: files other local accounts could read, in every route. Prints JSON.

    .venv/bin/python -m bench.faults.file_modes [--memories 20]

- ``serve``: ``ccmem serve --data-dir X`` on a fresh folder made 0755 (stopped by PID at the
  end), ``--memories`` written: what under X others can read (``readable_after_fresh_start``);
  then every folder made 0755 and every file 0644, as an older install left them, and the
  server started again (``readable_after_restart``).
- ``checkout``: install.sh's ``private_data_dir`` on a new and on a 0755 ``data/``
  (``install_data_dirs_open``).
- ``package``: ``ccmem setup``'s directories and ``.env`` (``package_paths_open``).
- ``keys``: the OAuth signing key and the self-signed TLS key made 0644 and loaded again: each
  must be refused (``widened_keys_accepted``).

Key files (``*.pem``) are not counted as readable data: their loaders refuse them (``keys``).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import stat
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Any

from claude_code_memory.auth.oauth import keys
from claude_code_memory.auth.tls import make_self_signed
from claude_code_memory.errors import ConfigError
from claude_code_memory.stack import user_setup
from tests.support.server import MemoryServer, add_memory

#: What must be 0 (the module's docstring).
FIGURES = (
    "readable_after_fresh_start",
    "readable_after_restart",
    "install_data_dirs_open",
    "package_paths_open",
    "widened_keys_accepted",
)
INSTALL_SH = Path(__file__).resolve().parents[2] / "install.sh"


def mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


def readable(root: Path) -> list[str]:
    """``root`` and what is under it with a group or other permission, keys and links aside."""
    found = [str(root)] if mode(root) & 0o077 else []
    for folder, folders, files in os.walk(root):
        for name in [*folders, *files]:
            path = Path(folder, name)
            if not path.is_symlink() and not name.endswith(".pem") and mode(path) & 0o077:
                found.append(str(path))
    return found


def widen(root: Path) -> None:
    """The modes an older install left: folders 0755, files 0644."""
    root.chmod(0o755)
    for folder, folders, files in os.walk(root):
        for name in folders:
            Path(folder, name).chmod(0o755)
        for name in files:
            if not name.endswith(".pem"):
                Path(folder, name).chmod(0o644)


def serve_route(root: Path, memories: int) -> dict[str, Any]:
    data = root / "data"
    data.mkdir(parents=True)
    data.chmod(0o755)
    with MemoryServer(root, data_dir=data) as server:
        token = server.make_token(f"modes-{uuid.uuid4().hex[:6]}")
        for index in range(memories):
            add_memory(server, token, f"The modes probe fact number {index} is about the heron")
        fresh = readable(data)
        widen(data)
        server.restart()
        add_memory(server, token, "A fact written after the restart")
        again = readable(data)
    return {"readable_after_fresh_start": fresh, "readable_after_restart": again}


def checkout_route(root: Path) -> list[str]:
    [function] = re.findall(
        r"\nprivate_data_dir\(\) \{\n.*?\n\}\n", INSTALL_SH.read_text(encoding="utf-8"), re.S
    )
    fresh, older = root / "fresh", root / "older"
    fresh.mkdir(parents=True)
    (older / "data").mkdir(parents=True)
    (older / "data").chmod(0o755)
    for checkout in (fresh, older):
        subprocess.run(
            ["/bin/bash", "-c", f"umask 022\n{function}\nprivate_data_dir"],
            cwd=checkout,
            env={"PATH": "/usr/bin:/bin"},
            timeout=30,
            check=True,
        )
    return [str(c / "data") for c in (fresh, older) if mode(c / "data") & 0o077]


def package_route(root: Path) -> list[str]:
    before = os.umask(0o022)
    try:
        report = user_setup.setup({"HOME": str(root / "home")}, model=False)
    finally:
        os.umask(before)
    open_paths = [str(p) for p in (report.config_dir, report.data_dir, report.state_dir) if mode(p) != 0o700]
    return open_paths + ([str(report.env_file)] if mode(report.env_file) != 0o600 else [])


def widened_keys(root: Path) -> list[str]:
    accepted = []
    keys.load_or_create(root / "oauth")
    (root / "oauth" / keys.KEY_FILE).chmod(0o644)
    made = make_self_signed(root / "tls", "127.0.0.1")
    made.key_file.chmod(0o644)
    for name, load in (
        ("oauth signing key", lambda: keys.load_or_create(root / "oauth")),
        ("self-signed TLS key", lambda: make_self_signed(root / "tls", "127.0.0.1")),
    ):
        try:
            load()
        except ConfigError:
            continue
        accepted.append(name)
    return accepted


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        paths: dict[str, list[str]] = {
            **serve_route(root / "serve", args.memories),
            "install_data_dirs_open": checkout_route(root / "checkout"),
            "package_paths_open": package_route(root / "package"),
            "widened_keys_accepted": widened_keys(root / "keys"),
        }
    report: dict[str, Any] = {name: len(paths[name]) for name in FIGURES}
    report["examples"] = {name: found[:5] for name, found in paths.items() if found}
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
