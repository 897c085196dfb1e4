"""The Docker files, checked offline: docker-compose validates the compose files, hadolint lints
the Dockerfile, and the settings that keep users' data and secrets safe are there.

The images themselves are built and run by ``.ci/docker-stack`` (a phase of ``.ci/run``): that
needs a Docker daemon and minutes, so it is not part of the default test run.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.support.edge import for_debian_caddy
from tests.support.processes import require_tool
from tests.support.server import REPO_ROOT, ccmem_bin

COMPOSE_FILES = ("docker-compose.yml", "docker-compose.embedded.yml")
OUR_SERVICES = ("api", "ui", "proxy")


def compose_bin() -> Path:
    return require_tool("docker-compose", "validates the compose files (apt-get install docker-compose)")


def project(tmp_path: Path, env_lines: str = "CCMEM_ADMIN_TOKEN=not-a-real-token\n") -> Path:
    """A copy of the compose files and the Dockerfile with an .env of its own (never the
    checkout's: it holds a real admin token)."""
    where = tmp_path / "project"
    where.mkdir()
    for name in (*COMPOSE_FILES, "Dockerfile", "deploy/Caddyfile"):
        (where / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(REPO_ROOT / name, where / name)
    (where / ".env").write_text(env_lines)
    return where


def compose(where: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    clean = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME": str(where)}
    return subprocess.run(
        [str(compose_bin()), *args],
        cwd=where,
        env={**clean, **(env or {})},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def resolved(where: Path, *files: str, env: dict[str, str] | None = None) -> dict:
    args = [arg for name in files for arg in ("-f", name)]
    completed = compose(where, *args, "config", env=env)
    assert completed.returncode == 0, completed.stderr
    return yaml.safe_load(completed.stdout)


def port_of(entry: str | dict) -> tuple[str, str, int]:
    """(host address, host port, container port) of a published port, either syntax."""
    if isinstance(entry, dict):
        return entry.get("host_ip", ""), str(entry["published"]), int(entry["target"])
    host_ip, published, target = entry.rsplit("/", 1)[0].rsplit(":", 2)
    return host_ip, published, int(target)


def volume_targets(service: dict) -> dict[str, str]:
    """{container path: named volume} of a service's volumes, either syntax."""
    targets = {}
    for entry in service.get("volumes", []):
        if isinstance(entry, dict):
            targets[entry["target"]] = entry["source"]
        else:
            source, target = entry.split(":")[:2]
            targets[target] = source
    return targets


@pytest.mark.e2e
def test_compose_files_are_valid(tmp_path: Path) -> None:
    where = project(tmp_path)
    for files in (["docker-compose.yml"], list(COMPOSE_FILES)):
        args = [arg for name in files for arg in ("-f", name)]
        completed = compose(where, *args, "config", "-q")
        assert completed.returncode == 0, f"{files}: {completed.stderr}"


@pytest.mark.e2e
def test_compose_rejects_a_broken_file(tmp_path: Path) -> None:
    """The validation above can fail: a misspelt key is an error."""
    where = project(tmp_path)
    text = (where / "docker-compose.yml").read_text()
    (where / "docker-compose.yml").write_text(text.replace("    healthcheck:\n", "    healthchek:\n", 1))
    completed = compose(where, "config", "-q")
    assert completed.returncode != 0
    assert "healthchek" in completed.stderr


@pytest.mark.e2e
def test_the_stack_as_resolved(tmp_path: Path) -> None:
    config = resolved(project(tmp_path), "docker-compose.yml")
    # The team profile's services are test_the_team_profile's (they start only with --profile team).
    services = {name: s for name, s in config["services"].items() if not s.get("profiles")}
    assert set(services) == {"qdrant", "api", "ui", "proxy"}

    qdrant = services["qdrant"]
    # Pinned, and the data where Qdrant keeps it (OpenMemory's wrong path lost users' data).
    assert re.fullmatch(r"qdrant/qdrant:v\d+\.\d+\.\d+(-unprivileged)?", qdrant["image"])
    assert volume_targets(qdrant) == {"/qdrant/storage": "qdrant-data"}
    assert "ports" not in qdrant, "Qdrant is for the api container only"

    api = services["api"]
    assert api["environment"]["QDRANT_URL"] == "http://qdrant:6333"
    assert api["depends_on"]["qdrant"]["condition"] == "service_healthy"
    assert "/health" in " ".join(api["healthcheck"]["test"])
    assert volume_targets(api) == {"/data": "api-data"}
    # The secret came from .env, not from the compose file.
    assert api["environment"]["CCMEM_ADMIN_TOKEN"] == "not-a-real-token"

    proxy = services["proxy"]
    assert proxy["build"]["target"] == "proxy"
    assert proxy["environment"]["CCMEM_PROXY__API_URL"] == "http://api:8765"
    assert volume_targets(proxy) == {"/data": "proxy-data"}
    assert services["ui"]["environment"]["CCMEM_UI__API_URL"] == "http://api:8765"

    published = {}
    for name, service in services.items():
        assert service.get("init") is True, f"{name} has no init"
        assert "healthcheck" in service, f"{name} has no healthcheck"
        for entry in service.get("ports", []):
            host_ip, host_port, target = port_of(entry)
            published[name] = (host_port, target)
            assert host_ip == "127.0.0.1", f"{name} is published beyond this machine: {entry}"
    assert published == {"api": ("8765", 8765), "ui": ("3000", 3000), "proxy": ("8080", 8080)}
    for name in OUR_SERVICES:
        assert services[name]["build"]["args"]["BASE_IMAGE"] == "python:3.11-slim-bookworm"
    # Named volumes, which `docker-compose down` keeps.
    assert {"qdrant-data", "api-data", "proxy-data"} <= set(config["volumes"])


TEAM = ("postgres", "api-1", "api-2", "edge")


@pytest.mark.e2e
def test_the_team_profile(tmp_path: Path) -> None:
    """PostgreSQL, Qdrant, two API replicas on them and Caddy with TLS in front (docs/team.md)."""
    where = project(tmp_path, "CCMEM_ADMIN_TOKEN=admin-secret\nCCMEM_POSTGRES_PASSWORD=pg-secret\n")
    completed = compose(where, "--profile", "team", "config", "-q")
    assert completed.returncode == 0, completed.stderr
    services = resolved(where, "docker-compose.yml")["services"]
    for name in TEAM:
        assert services[name]["profiles"] == ["team"], name
        assert services[name].get("init") is True, name
    assert services["postgres"]["image"].startswith("postgres:")
    assert "ports" not in services["postgres"], "PostgreSQL is for the replicas only"
    assert volume_targets(services["postgres"]) == {"/var/lib/postgresql/data": "postgres-data"}
    replicas = [services["api-1"], services["api-2"]]
    for replica in replicas:
        environment = replica["environment"]
        assert environment["CCMEM_SERVER__REPLICAS"] == "2"
        assert environment["DATABASE_URL"] == "postgresql://ccmem:pg-secret@postgres:5432/ccmem"
        assert environment["QDRANT_URL"] == "http://qdrant:6333"
        assert "ports" not in replica, "the replicas are reached through the edge only"
        assert replica["depends_on"]["postgres"]["condition"] == "service_healthy"
        assert replica["depends_on"]["qdrant"]["condition"] == "service_healthy"
    # Each replica keeps its own local files; the memories are in PostgreSQL and Qdrant.
    assert volume_targets(replicas[0]) == {"/data": "api-1-data"}
    assert volume_targets(replicas[1]) == {"/data": "api-2-data"}

    edge = services["edge"]
    assert re.fullmatch(r"caddy:\d+\.\d+[\w.-]*", edge["image"]), edge["image"]
    assert [port_of(entry) for entry in edge["ports"]] == [("127.0.0.1", "8443", 443)]
    assert {"api-1", "api-2"} <= set(edge["depends_on"])
    mounts = volume_targets(edge)
    assert mounts["/data"] == "caddy-data", "the local CA must outlive the container"
    assert mounts["/etc/caddy/Caddyfile"].endswith("deploy/Caddyfile")
    # The PostgreSQL password reaches PostgreSQL and the replicas' DATABASE_URL, nothing else.
    holders = {
        name
        for name, service in services.items()
        for value in (service.get("environment") or {}).values()
        if "pg-secret" in str(value)
    }
    assert holders == {"postgres", "api-1", "api-2"}


def caddy_bin() -> Path:
    return require_tool("caddy", "validates deploy/Caddyfile (apt-get install caddy)")


def validate_caddyfile(tmp_path: Path, text: str) -> subprocess.CompletedProcess[str]:
    """``caddy validate`` of ``text`` with the replicas' names pointed at a closed loopback port
    (validating starts the health checks: they must not look names up)."""
    path = tmp_path / "Caddyfile"
    text = for_debian_caddy(text)
    path.write_text(text.replace("api-1:8765", "127.0.0.1:9").replace("api-2:8765", "127.0.0.1:9"))
    home = {"HOME": str(tmp_path), "XDG_DATA_HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path)}
    return subprocess.run(
        [str(caddy_bin()), "validate", "--config", str(path), "--adapter", "caddyfile"],
        env={"PATH": "/usr/bin:/bin", **home},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.mark.e2e
def test_the_edge_caddyfile_is_valid(tmp_path: Path) -> None:
    text = (REPO_ROOT / "deploy" / "Caddyfile").read_text()
    completed = validate_caddyfile(tmp_path, text)
    assert completed.returncode == 0, completed.stderr
    assert "tls internal" in text and "api-1:8765 api-2:8765" in text
    # The validation can fail: an unknown load-balancing policy is an error.
    broken = validate_caddyfile(tmp_path, text.replace("lb_policy round_robin", "lb_policy round_robinn"))
    assert broken.returncode != 0 and "round_robinn" in broken.stderr


@pytest.mark.e2e
def test_each_container_gets_only_its_own_secrets(tmp_path: Path) -> None:
    env = "CCMEM_ADMIN_TOKEN=admin-secret\nCCMEM_PROXY_TOKEN=proxy-secret\nCCMEM_UI_SECRET=ui-secret\n"
    services = resolved(project(tmp_path, env), "docker-compose.yml")["services"]
    secrets = {
        name: {k: v for k, v in services[name]["environment"].items() if v.endswith("-secret")}
        for name in OUR_SERVICES
    }
    assert secrets == {
        "api": {"CCMEM_ADMIN_TOKEN": "admin-secret"},
        "ui": {"CCMEM_UI_SECRET": "ui-secret"},
        "proxy": {"CCMEM_PROXY_TOKEN": "proxy-secret"},
    }


@pytest.mark.e2e
def test_settings_from_env_reach_the_file(tmp_path: Path) -> None:
    """Ports, bind address and base image are chosen in .env (or the shell), not by editing."""
    where = project(tmp_path, "CCMEM_ADMIN_TOKEN=x\nCCMEM_API_PORT=9999\nCCMEM_BIND=0.0.0.0\n")
    services = resolved(where, "docker-compose.yml", env={"BASE_IMAGE": "local-debian:test"})["services"]
    assert port_of(services["api"]["ports"][0]) == ("0.0.0.0", "9999", 8765)
    assert services["api"]["build"]["args"]["BASE_IMAGE"] == "local-debian:test"


@pytest.mark.e2e
def test_the_embedded_override_drops_qdrant(tmp_path: Path) -> None:
    api = resolved(project(tmp_path), *COMPOSE_FILES)["services"]["api"]
    # Empty means unset for our settings: the API falls back to its embedded store.
    assert api["environment"]["QDRANT_URL"] == ""


@pytest.mark.e2e
def test_dockerfile_passes_hadolint() -> None:
    hadolint = require_tool(
        ccmem_bin().parent / "hadolint", "lints the Dockerfile (pip install -r requirements-dev.txt)"
    )
    completed = subprocess.run(
        [str(hadolint), "--no-color", str(REPO_ROOT / "Dockerfile")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr


@pytest.mark.e2e
def test_hadolint_finds_problems(tmp_path: Path) -> None:
    """The lint above can fail: an unpinned pip install in a copy of the Dockerfile is caught."""
    hadolint = require_tool(
        ccmem_bin().parent / "hadolint", "lints the Dockerfile (pip install -r requirements-dev.txt)"
    )
    broken = tmp_path / "Dockerfile"
    broken.write_text((REPO_ROOT / "Dockerfile").read_text() + "\nRUN pip install requests\n")
    completed = subprocess.run(
        [str(hadolint), "--no-color", str(broken)], capture_output=True, text=True, timeout=60, check=False
    )
    assert completed.returncode != 0
    assert "DL3013" in completed.stdout


def test_dockerfile_base_image_and_user() -> None:
    text = (REPO_ROOT / "Dockerfile").read_text()
    assert re.search(r"^ARG BASE_IMAGE=python:3\.11-slim-bookworm$", text, re.M)
    assert re.findall(r"^FROM (\S+) AS (\S+)$", text, re.M) == [
        ("${BASE_IMAGE}", "python"),
        ("python", "proxy-venv"),
        ("python", "app"),
        ("app", "proxy"),
    ]
    users = re.findall(r"^USER (\S+)$", text, re.M)
    assert users and users[-1] != "0" and not users[-1].startswith("0:"), "the images must not run as root"


def test_dockerfile_installs_the_tokenizer_install_sh_pins() -> None:
    install_sh = re.search(r'^TOKENIZER_PACKAGE="([^"]+)"$', (REPO_ROOT / "install.sh").read_text(), re.M)
    dockerfile = re.search(r"^ARG VOCAB_PACKAGE=(\S+)$", (REPO_ROOT / "Dockerfile").read_text(), re.M)
    assert install_sh and dockerfile
    assert dockerfile.group(1) == install_sh.group(1)


def test_dockerignore_keeps_secrets_and_data_out() -> None:
    """Allow-list: everything is excluded first, so .env, data/ and the venvs never reach a build."""
    lines = [
        line.strip()
        for line in (REPO_ROOT / ".dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    assert lines[0] == "*"
    allowed = [line for line in lines if line.startswith("!")]
    for secret in ("!.env", "!data", "!.venv", "!.git"):
        assert not any(line.startswith(secret) for line in allowed), secret
    for needed in ("requirements.txt", "pyproject.toml", "claude_code_memory/", "config.yaml", "proxy/"):
        assert f"!{needed}" in allowed, needed
    assert "proxy/.venv/" in lines


@pytest.mark.parametrize("name", ["docker-compose.yml", "docker-compose.embedded.yml"])
def test_no_secret_values_in_compose_files(name: str) -> None:
    text = (REPO_ROOT / name).read_text()
    for key in ("CCMEM_ADMIN_TOKEN", "CCMEM_PROXY_TOKEN", "CCMEM_UI_SECRET", "API_KEY"):
        # An empty value ("") is allowed: it unsets a secret for a service that must not have it.
        assert not re.search(rf"{key}\s*[:=][ \t]*(?!\"\"|'')\S", text), f"{key} has a value in {name}"
