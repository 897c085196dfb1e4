"""Where a package install keeps its files (the XDG base directories) and which config file a
command reads when none is named. Standard library only."""

from __future__ import annotations

import os
from pathlib import Path


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


def default_config_path(environ: dict[str, str] | None = None) -> Path:
    """The config file read when none is named (``--config``, ``$CCMEM_CONFIG``).

    ``./config.yaml`` wins where there is one (a checkout: its ``.env`` and ``data/`` as
    always); else the per-user file ``ccmem setup`` writes, once it exists; else
    ``./config.yaml``, which is missing: built-in defaults.
    """
    local = Path("config.yaml")
    if local.exists():
        return local
    per_user = user_dirs(environ)[0] / "config.yaml"
    return per_user if per_user.is_file() else local
