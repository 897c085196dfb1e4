"""``ccmem proxy``: the mitmdump command line and the client environment it derives from settings."""

from __future__ import annotations

import os
import shlex
import subprocess
from pathlib import Path

import pytest

from claude_code_memory.cli.proxy import ADDON_SCRIPT, client_env, mitmdump_command
from claude_code_memory.config import load_settings
from tests.support.server import ccmem_bin

TOKEN = "ccm_proxy-token-never-on-a-command-line"


def run_ccmem(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CCMEM_")}
    env |= {"CCMEM_PROXY_TOKEN": TOKEN, "HOME": str(tmp_path)}
    return subprocess.run(
        [str(ccmem_bin()), "proxy", "--data-dir", str(tmp_path / "data"), *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.mark.integration
def test_forward_mode_intercepts_only_the_upstream_hosts(tmp_path: Path) -> None:
    completed = run_ccmem(tmp_path, "--print-command", "--port", "18080")
    assert completed.returncode == 0, completed.stderr
    argv = shlex.split(completed.stdout)
    assert argv[1:3] == ["-s", str(ADDON_SCRIPT)]
    assert "--mode" not in argv
    assert argv[argv.index("--allow-hosts") + 1] == r"^api\.anthropic\.com:\d+$"
    assert argv[argv.index("--listen-port") + 1] == "18080"
    assert argv[argv.index("--listen-host") + 1] == "127.0.0.1"
    sets = [argv[i + 1] for i, arg in enumerate(argv) if arg == "--set"]
    assert f"confdir={tmp_path / 'data' / 'proxy'}" in sets
    assert f"ccmem_outbox={tmp_path / 'data' / 'proxy' / 'outbox.db'}" in sets
    assert "ccmem_upstream_hosts=api.anthropic.com" in sets
    assert TOKEN not in completed.stdout + completed.stderr


@pytest.mark.integration
def test_reverse_mode_forwards_to_the_upstream_and_captures_it(tmp_path: Path) -> None:
    completed = run_ccmem(tmp_path, "--print-command", "--mode", "reverse")
    assert completed.returncode == 0, completed.stderr
    argv = shlex.split(completed.stdout)
    assert argv[argv.index("--mode") + 1] == "reverse:https://api.anthropic.com"
    assert "--allow-hosts" not in argv
    # Extra arguments after -- go to mitmdump unchanged.
    extra = run_ccmem(tmp_path, "--print-command", "--", "--set", "ssl_insecure=true")
    assert shlex.split(extra.stdout)[-2:] == ["--set", "ssl_insecure=true"]


@pytest.mark.integration
def test_a_bad_mode_is_a_usage_error(tmp_path: Path) -> None:
    completed = run_ccmem(tmp_path, "--mode", "sideways")
    assert completed.returncode == 2
    assert "sideways" in completed.stderr


def test_client_environment_for_each_mode(tmp_path: Path) -> None:
    (tmp_path / "none.yaml").write_text("")
    forward = load_settings(
        config_path=tmp_path / "none.yaml",
        overrides={"server.data_dir": str(tmp_path / "data"), "proxy.upstream_hosts": ["localhost"]},
    )
    env = client_env(forward)
    assert env == {
        "HTTPS_PROXY": "http://127.0.0.1:8080",
        "NODE_EXTRA_CA_CERTS": str(tmp_path / "data" / "proxy" / "mitmproxy-ca-cert.pem"),
        "NO_PROXY": "127.0.0.1",
    }
    reverse = load_settings(
        config_path=tmp_path / "none.yaml", overrides={"proxy.mode": "reverse", "proxy.port": 9090}
    )
    assert client_env(reverse) == {"ANTHROPIC_BASE_URL": "http://127.0.0.1:9090"}
    assert "ccmem_upstream_hosts=api.anthropic.com" in mitmdump_command(reverse)


def test_the_memory_tool_bridge_switch_reaches_the_addon(tmp_path: Path) -> None:
    for value in ("false", "true"):
        config = tmp_path / f"bridge-{value}.yaml"
        config.write_text(f"proxy:\n  memory_tool_bridge: {value}\n")
        settings = load_settings(config_path=config)
        assert f"ccmem_memory_tool_bridge={value}" in mitmdump_command(settings)
    (tmp_path / "empty.yaml").write_text("{}\n")
    off = load_settings(config_path=tmp_path / "empty.yaml")
    assert "ccmem_memory_tool_bridge=false" in mitmdump_command(off)  # off unless asked for


@pytest.mark.integration
def test_settings_from_the_config_file_reach_mitmdump_verbatim(tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(
        "proxy:\n  skip_models: ['claude-[hx]*', 'tiny-?']\n  capture_tool_results: true\n"
        "  upstream_hosts: [api.anthropic.com, llm-gateway.internal]\nprivacy:\n  mask_pii: true\n"
    )
    completed = run_ccmem(tmp_path, "--print-command", "--config", str(config))
    assert completed.returncode == 0, completed.stderr
    argv = shlex.split(completed.stdout)
    sets = [argv[i + 1] for i, arg in enumerate(argv) if arg == "--set"]
    assert "ccmem_skip_models=claude-[hx]*,tiny-?" in sets
    assert "ccmem_capture_tool_results=true" in sets and "ccmem_mask_pii=true" in sets
    assert "ccmem_upstream_hosts=api.anthropic.com,llm-gateway.internal" in sets
    allowed = [argv[i + 1] for i, arg in enumerate(argv) if arg == "--allow-hosts"]
    assert allowed == [r"^api\.anthropic\.com:\d+$", r"^llm\-gateway\.internal:\d+$"]


def test_the_package_s_mitmproxy_pin_is_proxy_requirements_txt_s() -> None:
    from claude_code_memory.cli.proxy import MITMPROXY_REQUIREMENT, PACKAGED_ADDON, PROXY_DIR

    pins = [line.strip() for line in (PROXY_DIR / "requirements.txt").read_text().splitlines()]
    assert MITMPROXY_REQUIREMENT in pins
    # The addon the package ships is the checkout's own package, not a copy.
    assert PACKAGED_ADDON.parent.resolve() == (PROXY_DIR / "ccmem_capture").resolve()
