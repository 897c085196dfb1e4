"""Which config file a command reads, and what the relative paths in it mean; where a package
install keeps its files (the XDG base directories). Standard library only.

What ``ccmem`` talks to never depends on the directory it runs in. The config file is, in order:

1. the one named: ``--config``, else ``$CCMEM_CONFIG``;
2. the installation's own: the checkout this code runs from (its ``config.yaml`` beside the
   ``pyproject.toml`` of claude-code-memory that holds this package);
3. the per-user file ``ccmem setup`` writes (``~/.config/ccmem/config.yaml``), once it exists;
4. none: built-in defaults, with the per-user data and state directories.

Relative paths in a config file (``server.data_dir``, ``server.state_dir``, the TLS files) are
relative to that file's directory, as is the ``.env`` read beside it.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CONFIG_ENV = "CCMEM_CONFIG"
#: The distribution whose checkout holds this package (pyproject.toml's project name).
DISTRIBUTION = "claude-code-memory"
#: ``claude_code_memory/``: this module is in its ``config/``.
PACKAGE_DIR = Path(__file__).resolve().parents[1]
#: Settings that name a file or directory, as dotted keys.
PATH_KEYS = ("server.data_dir", "server.state_dir", "server.tls.cert_file", "server.tls.key_file")


def user_dirs(environ: dict[str, str] | None = None) -> tuple[Path, Path, Path]:
    """The per-user config, data and state directories of a package install (XDG base
    directories: ``$XDG_CONFIG_HOME/ccmem``, ``$XDG_DATA_HOME/ccmem``, ``$XDG_STATE_HOME/ccmem``,
    by default under ``~/.config``, ``~/.local/share`` and ``~/.local/state``)."""
    environ = dict(os.environ if environ is None else environ)
    home = Path(environ.get("HOME") or Path.home())

    def base(variable: str, default: str) -> Path:
        # The spec: a relative value is invalid and ignored.
        value = environ.get(variable, "")
        return Path(value) if value and Path(value).is_absolute() else home / default

    return (
        base("XDG_CONFIG_HOME", ".config") / "ccmem",
        base("XDG_DATA_HOME", ".local/share") / "ccmem",
        base("XDG_STATE_HOME", ".local/state") / "ccmem",
    )


def checkout_config(package_dir: Path = PACKAGE_DIR) -> Path | None:
    """The ``config.yaml`` of the checkout ``package_dir`` belongs to; None for an installed
    package (its parent is site-packages: no pyproject.toml of ours there)."""
    root = package_dir.parent
    try:
        project = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8")).get("project")
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None
    config = root / "config.yaml"
    if not isinstance(project, dict) or project.get("name") != DISTRIBUTION or not config.is_file():
        return None
    return config


@dataclass(frozen=True)
class ConfigChoice:
    """The config file a command reads and why; ``path`` may not exist (``source`` "defaults")."""

    path: Path
    #: "--config", "$CCMEM_CONFIG", "checkout", "per-user" or "defaults".
    source: str

    @property
    def explicit(self) -> bool:
        """Named by the user: a missing file is an error, not defaults."""
        return self.source in ("--config", f"${CONFIG_ENV}")


_CHECKOUT: Any = object()  # "look for the checkout this code runs from"


def choose_config(
    given: str | Path | ConfigChoice | None = None,
    environ: dict[str, str] | None = None,
    *,
    checkout: Path | None = _CHECKOUT,
) -> ConfigChoice:
    """The config file by the order in the module docstring. ``checkout`` stands in for
    :func:`checkout_config` (None: run as an installed package)."""
    if isinstance(given, ConfigChoice):
        return given
    environ = dict(os.environ if environ is None else environ)
    if given:
        return ConfigChoice(Path(given), "--config")
    if environ.get(CONFIG_ENV):
        return ConfigChoice(Path(environ[CONFIG_ENV]), f"${CONFIG_ENV}")
    own = checkout_config() if checkout is _CHECKOUT else checkout
    if own is not None:
        return ConfigChoice(Path(own), "checkout")
    per_user = user_dirs(environ)[0] / "config.yaml"
    return ConfigChoice(per_user, "per-user" if per_user.is_file() else "defaults")


def default_config_path(environ: dict[str, str] | None = None) -> Path:
    """The config file read when none is named (``--config``, ``$CCMEM_CONFIG``): the checkout's,
    else the per-user one (missing until ``ccmem setup``: then built-in defaults)."""
    environ = dict(os.environ if environ is None else environ)
    environ.pop(CONFIG_ENV, None)
    return choose_config(None, environ).path


def anchor_paths(tree: dict[str, Any], choice: ConfigChoice, environ: dict[str, str] | None = None) -> None:
    """Make the path settings in ``tree`` (a config file's content) absolute, in place: relative
    ones against the file's directory; with no file, the per-user data and state directories."""
    server = tree.setdefault("server", {})
    if not isinstance(server, dict):
        return  # validation names the bad section
    if choice.source == "defaults":
        _, data_dir, state_dir = user_dirs(environ)
        server.setdefault("data_dir", str(data_dir))
        server.setdefault("state_dir", str(state_dir))
    else:
        server.setdefault("data_dir", "data")  # the built-in default, beside the file too
    base = choice.path.expanduser().resolve().parent
    for dotted in PATH_KEYS:
        *parents, key = dotted.split(".")
        node: Any = tree
        for part in parents:
            node = node.get(part) if isinstance(node, dict) else None
        value = node.get(key) if isinstance(node, dict) else None
        if isinstance(value, str) and value:
            where = Path(value).expanduser()
            node[key] = str(where if where.is_absolute() else base / where)
