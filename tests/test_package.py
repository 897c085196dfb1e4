"""The package route: a wheel and an sdist built for real, the wheel installed with pip into a fresh
virtualenv outside the repository, ``ccmem up`` from a directory with no config.yaml under a
temporary HOME (per-user XDG directories, the admin token 0600, the model built), the smoke test
``test_integration.py`` against it, and the stack stopped by its PIDs. Then the pure parts of
the per-user setup: the directories, which config file wins, the defaults the package ships.
"""

from __future__ import annotations

import re
import shutil
import sys
import tarfile
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import yaml

from claude_code_memory.client.claude_plugin import marketplace_root
from claude_code_memory.config import default_config_path, load_settings, user_dirs
from claude_code_memory.config.locations import choose_config
from claude_code_memory.stack import user_setup
from tests.support.fake_anthropic import FakeAnthropic, always_text
from tests.support.package import Built, Installed, install, run, said
from tests.support.processes import free_port
from tests.support.server import REPO_ROOT

#: What a wheel must carry besides the modules (the package data pyproject.toml lists).
PACKAGE_DATA = (
    "claude_code_memory/config.default.yaml",
    "claude_code_memory/db/migrations/env.py",
    "claude_code_memory/ui/templates/base.html",
    "claude_code_memory/ui/static/ui.css",
    "claude_code_memory/marketplace/.claude-plugin/marketplace.json",
    "claude_code_memory/marketplace/plugin/.claude-plugin/plugin.json",
    "claude_code_memory/marketplace/plugin/.mcp.json",
    "claude_code_memory/marketplace/plugin/hooks/hooks.json",
    "claude_code_memory/marketplace/plugin/scripts/memory_hook.py",
    "claude_code_memory/marketplace/plugin/scripts/memory_hook.sh",
    "claude_code_memory/marketplace/plugin/skills/remember/SKILL.md",
    # The capture proxy's addon, for `ccmem proxy` without a checkout.
    "claude_code_memory/capture_addon/addon.py",
    "claude_code_memory/capture_addon/mitmdump_addon.py",
)


@pytest.fixture
def installed(built: Built, tmp_path: Path) -> Iterator[Installed]:
    where = install(built, tmp_path)
    where.ports = {"api": free_port(), "ui": free_port(), "proxy": free_port()}
    where.env.update(
        CCMEM_SERVER__PORT=str(where.ports["api"]),
        CCMEM_UI__PORT=str(where.ports["ui"]),
        CCMEM_PROXY__PORT=str(where.ports["proxy"]),
    )
    yield where
    where.stop()


@pytest.mark.integration
def test_wheel_and_sdist_carry_the_package_data(built: Built) -> None:
    names = set(zipfile.ZipFile(built.wheel).namelist())
    missing = [name for name in PACKAGE_DATA if name not in names]
    assert not missing, missing
    with tarfile.open(built.sdist) as sdist:
        members = {member.name.split("/", 1)[1] for member in sdist.getmembers() if "/" in member.name}
    missing = [name for name in (*PACKAGE_DATA, "pyproject.toml", "README.md") if name not in members]
    assert not missing, missing


def proxy_venv_from_the_checkout(installed: Installed) -> None:
    """The proxy's virtualenv where ``ccmem proxy --install`` makes it, standing in for that
    command: a link to the checkout's proxy/.venv (./install.sh makes it the same way: a plain
    venv with proxy/requirements.txt), since installing mitmproxy again takes ~100 s here. What
    runs from it is the addon inside the installed package."""
    venv = REPO_ROOT / "proxy" / ".venv"
    assert (venv / "bin" / "mitmdump").exists(), "the capture proxy's virtualenv: run ./install.sh --dev"
    target = installed.home / ".local" / "share" / "ccmem" / "proxy-venv"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.symlink_to(venv)


@pytest.mark.integration
@pytest.mark.timeout(1800)
def test_wheel_installs_and_runs_outside_the_checkout(installed: Installed) -> None:
    # Without the proxy's virtualenv the stack leaves the proxy out and says how to get it.
    left_out = installed.ccmem("stack", "up", "--service", "proxy", "--timeout", "30")
    assert left_out.returncode != 0 and "ccmem proxy --install" in left_out.stdout + left_out.stderr, said(
        left_out
    )
    proxy_venv_from_the_checkout(installed)
    upstream = FakeAnthropic(always_text("Noted: wrenfinch.")).start()
    installed.env |= {"CCMEM_PROXY__MODE": "reverse", "CCMEM_PROXY__REVERSE_UPSTREAM": upstream.base_url}
    upped = installed.ccmem("up", "--timeout", "240")
    assert upped.returncode == 0, said(upped)
    config_dir = installed.home / ".config" / "ccmem"
    data_dir = installed.home / ".local" / "share" / "ccmem"
    env_file = config_dir / ".env"
    assert (env_file.stat().st_mode & 0o777) == 0o600
    [admin] = re.findall(r"^CCMEM_ADMIN_TOKEN=(\S+)$", env_file.read_text(), re.M)
    assert admin not in upped.stdout + upped.stderr
    assert (data_dir / "memory.db").exists()
    assert (installed.state / "logs" / "api.log").exists()
    # Memories, token hashes and logs are the user's alone.
    for directory in (data_dir, installed.state, installed.state / "logs", installed.state / "run"):
        assert directory.stat().st_mode & 0o777 == 0o700, directory
    for private in (
        data_dir / "memory.db",
        installed.state / "logs" / "api.log",
        installed.state / "logs" / "stack.log",
    ):
        assert private.stat().st_mode & 0o777 == 0o600, private
    assert not (installed.workdir / "data").exists()  # nothing in the directory it ran from
    # The model was built beside the installed packages, and it is the pinned one.
    [model] = (installed.venv / "share" / "claude-code-memory").glob("*.onnx")
    assert model.stat().st_size > 1_000_000
    # No checkout: the capture proxy runs the addon the package ships, and captures a turn.
    assert "proxy left out" not in upped.stderr, said(upped)
    api = f"http://127.0.0.1:{installed.ports['api']}"
    said_by_user = "Remember that the kestrel deploy uses the wrenfinch tool."
    turn = {
        "model": "claude-sonnet-4-5",
        "max_tokens": 64,
        "messages": [{"role": "user", "content": said_by_user}],
    }
    answer = httpx.post(
        f"http://127.0.0.1:{installed.ports['proxy']}/v1/messages",
        json=turn,
        headers={"x-api-key": "dummy", "anthropic-version": "2023-06-01"},
        timeout=60,
    )
    upstream.stop()
    assert answer.status_code == 200 and "wrenfinch" in answer.text, answer.text
    admin_headers = {"Authorization": f"Bearer {admin}"}
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # the addon delivers from its outbox, in the background
        waiting = httpx.get(f"{api}/api/v1/consent/pending/count", headers=admin_headers, timeout=30).json()
        if waiting.get("total"):
            break
        time.sleep(0.5)
    assert waiting.get("total") == 1, (waiting, (installed.state / "logs" / "proxy.log").read_text()[-3000:])

    # The script as a package user has it, alone: run from this checkout, it would check the
    # checkout's own installation (its package, config.yaml and .env), as ccmem run from there does.
    downloads = installed.workdir.parent / "downloads"
    downloads.mkdir()
    script = shutil.copy(REPO_ROOT / "test_integration.py", downloads)
    smoke = run(
        [shutil.which("python3") or sys.executable, str(script), "--url", api],
        cwd=installed.workdir,
        env=installed.env,
        timeout=300,
    )
    assert smoke.returncode == 0, said(smoke)
    assert smoke.stdout.count("✓") == 6, smoke.stdout

    again = installed.ccmem("up", "--timeout", "60")
    assert again.returncode == 0 and "already runs" in again.stdout, said(again)
    assert re.findall(r"^CCMEM_ADMIN_TOKEN=(\S+)$", env_file.read_text(), re.M) == [admin]
    setup = installed.ccmem("setup")
    assert setup.returncode == 0 and "made" not in setup.stderr, said(setup)
    down = installed.ccmem("stack", "down", timeout=60)
    assert down.returncode == 0, said(down)


# -- the pure parts ------------------------------------------------------------------------
def test_user_dirs_follow_xdg() -> None:
    home = {"HOME": "/home/ada"}
    assert user_dirs(home) == (
        Path("/home/ada/.config/ccmem"),
        Path("/home/ada/.local/share/ccmem"),
        Path("/home/ada/.local/state/ccmem"),
    )
    chosen = {**home, "XDG_CONFIG_HOME": "/c", "XDG_DATA_HOME": "/d", "XDG_STATE_HOME": "relative"}
    # A relative XDG value is invalid by the spec and ignored.
    assert user_dirs(chosen) == (Path("/c/ccmem"), Path("/d/ccmem"), Path("/home/ada/.local/state/ccmem"))


def test_the_checkout_wins_then_the_per_user_one_and_never_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    environ = {"HOME": str(tmp_path / "home")}
    monkeypatch.chdir(tmp_path)
    (tmp_path / "config.yaml").write_text("database: {unknown: 1}\n")  # a project's own: ignored
    # This code runs from a checkout: its config.yaml, whatever the directory.
    assert default_config_path(environ) == REPO_ROOT / "config.yaml"
    assert choose_config(environ=environ).source == "checkout"
    # An installed package: nothing set up yet, built-in defaults with the per-user directories.
    nothing = choose_config(environ=environ, checkout=None)
    assert nothing.source == "defaults" and not nothing.path.exists()
    defaults = load_settings(nothing, environ=environ)
    _, data_dir, state_dir = user_dirs(environ)
    assert defaults.data_path == data_dir and defaults.state_path == state_dir
    report = user_setup.setup(environ, model=False)
    per_user = choose_config(environ=environ, checkout=None)
    assert (per_user.path, per_user.source) == (report.config_file, "per-user")
    settings = load_settings(per_user, environ=environ)
    assert settings.data_path == report.data_dir and settings.state_path == report.state_dir
    assert settings.server.admin_token
    # Named, it wins over both.
    named = choose_config(environ=environ | {"CCMEM_CONFIG": str(tmp_path / "config.yaml")}, checkout=None)
    assert named.explicit and named.path == tmp_path / "config.yaml"
    assert not (tmp_path / "data").exists()


def test_relative_paths_in_a_config_file_are_beside_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    where = tmp_path / "install"
    where.mkdir()
    (where / "config.yaml").write_text(
        "server:\n  state_dir: run\n  tls: {cert_file: tls/c.pem, key_file: /k.pem}\n"
    )
    (where / ".env").write_text("CCMEM_SERVER__DATA_DIR=store\n")
    monkeypatch.chdir(tmp_path)
    settings = load_settings(where / "config.yaml", environ={})
    assert settings.data_path == where / "store" and settings.state_path == where / "run"
    assert (settings.server.tls.cert_file, settings.server.tls.key_file) == (
        str(where / "tls/c.pem"),
        "/k.pem",
    )
    assert load_settings(where / "config.yaml", environ={"CCMEM_SERVER__DATA_DIR": "/abs"}).data_path == Path(
        "/abs"
    )
    (where / "config.yaml").write_text("server:\n  port: 9999\n")
    (where / ".env").unlink()
    assert load_settings(where / "config.yaml", environ={}).data_path == where / "data"


def test_setup_is_idempotent_and_keeps_secrets_private(tmp_path: Path) -> None:
    environ = {"HOME": str(tmp_path)}
    first = user_setup.setup(environ, model=False)
    token = first.env_file.read_text()
    assert (first.env_file.stat().st_mode & 0o777) == 0o600
    assert all((path.stat().st_mode & 0o777) == 0o700 for path in (first.config_dir, first.data_dir))
    first.config_file.write_text(first.config_file.read_text() + "# mine\n")
    second = user_setup.setup(environ, model=False)
    assert second.created == []
    assert second.env_file.read_text() == token
    assert second.config_file.read_text().endswith("# mine\n")


def test_the_package_ships_the_checkouts_defaults() -> None:
    assert user_setup.DEFAULTS.read_text() == (REPO_ROOT / "config.yaml").read_text()
    text = user_setup.config_text(user_setup.DEFAULTS.read_text(), Path("/d ir"), Path("/s"))
    server = yaml.safe_load(text)["server"]
    assert (server["data_dir"], server["state_dir"]) == ("/d ir", "/s")


def test_the_model_setup_checks_is_the_one_the_engine_runs() -> None:
    from claude_code_memory.engine import onnx_model

    assert onnx_model.default_model_path() == user_setup.MODEL_PATH
    assert user_setup.MODEL_SHA256 == onnx_model.MODEL_SHA256
    assert user_setup.model_built() is onnx_model.default_model_path().is_file()  # built in the venv


def test_the_tokenizer_pin_is_install_shs() -> None:
    found = re.search(r'^TOKENIZER_PACKAGE="([^"]+)"$', (REPO_ROOT / "install.sh").read_text(), re.M)
    assert found and found[1] == user_setup.TOKENIZER_PACKAGE


def test_the_marketplace_ships_in_the_package() -> None:
    # In a checkout the checkout's own; the package's links point at the same files.
    assert marketplace_root() == REPO_ROOT
    shipped = REPO_ROOT / "claude_code_memory" / "marketplace"
    for name in (".claude-plugin/marketplace.json", "plugin/.claude-plugin/plugin.json"):
        assert (shipped / name).read_bytes() == (REPO_ROOT / name).read_bytes()
