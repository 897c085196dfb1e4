"""Settings: loading order, validation messages, and documentation of every key."""

from pathlib import Path

import pytest

from claude_code_memory.config import all_keys, load_settings
from claude_code_memory.errors import ConfigError

ROOT = Path(__file__).resolve().parent.parent


def test_every_key_is_documented() -> None:
    docs = (ROOT / "docs" / "configuration.md").read_text()
    missing = [key for key in all_keys() if f"`{key}`" not in docs]
    assert missing == [], f"undocumented settings: {missing}"


def test_shipped_config_yaml_is_valid_and_has_the_integration_guide_keys() -> None:
    settings = load_settings(config_path=ROOT / "config.yaml", environ={})
    assert settings.mem0.mcp.client_name == "claude-code"
    assert settings.privacy.require_consent is True
    assert settings.memory.max_context_memories == 5
    assert settings.claude_code.fallback_mode is True
    assert settings.server.host == "127.0.0.1"


def test_defaults_without_a_file(tmp_path: Path) -> None:
    settings = load_settings(config_path=None, environ={"HOME": str(tmp_path)})
    assert settings.server.port == 8765
    assert settings.llm.provider == "none"


def test_environment_overrides_file_and_dotenv(tmp_path: Path) -> None:
    (tmp_path / "config.yaml").write_text("server:\n  port: 9000\nmemory:\n  max_context_memories: 7\n")
    (tmp_path / ".env").write_text("CCMEM_SERVER__PORT=9100\nCCMEM_ADMIN_TOKEN=from-dotenv\n")
    settings = load_settings(config_path=tmp_path / "config.yaml", environ={"CCMEM_SERVER__PORT": "9200"})
    assert settings.server.port == 9200  # environment beats .env beats the file
    assert settings.server.admin_token == "from-dotenv"
    assert settings.memory.max_context_memories == 7
    settings = load_settings(config_path=tmp_path / "config.yaml", environ={})
    assert settings.server.port == 9100


def test_well_known_variables() -> None:
    settings = load_settings(
        config_path=None,
        environ={"DATABASE_URL": "postgresql://u:p@127.0.0.1:5432/db", "QDRANT_URL": "http://127.0.0.1:6333"},
    )
    assert settings.database_url == "postgresql+psycopg://u:p@127.0.0.1:5432/db"
    assert settings.storage.qdrant_url == "http://127.0.0.1:6333"


@pytest.mark.parametrize(
    ("environ", "key", "value"),
    [
        ({"CCMEM_PRIVACY__AUTO_DELETE_AFTER_DAYS": "abc"}, "privacy.auto_delete_after_days", "'abc'"),
        ({"CCMEM_SERVER__PORT": "70000"}, "server.port", "70000"),
        ({"CCMEM_EMBEDDER__PROVIDER": "magic"}, "embedder.provider", "'magic'"),
        ({"DATABASE_URL": "mysql://x"}, "storage.database_url", "'mysql://x'"),
        ({"CCMEM_MEMORY__MAX_CONTEXT_MEMORIES": "0"}, "memory.max_context_memories", "0"),
    ],
)
def test_bad_values_name_key_and_value(environ: dict[str, str], key: str, value: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load_settings(config_path=None, environ=environ)
    assert key in caught.value.message
    assert value in caught.value.message


def test_unknown_key_and_bad_yaml(tmp_path: Path) -> None:
    (tmp_path / "c.yaml").write_text("privacy:\n  requre_consent: true\n")
    with pytest.raises(ConfigError, match="privacy.requre_consent: unknown setting"):
        load_settings(config_path=tmp_path / "c.yaml", environ={})
    (tmp_path / "d.yaml").write_text("server: [\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_settings(config_path=tmp_path / "d.yaml", environ={})
    with pytest.raises(ConfigError, match="does not exist"):
        load_settings(config_path=tmp_path / "missing.yaml", environ={})


def test_secrets_are_masked() -> None:
    settings = load_settings(
        config_path=None, environ={"CCMEM_ADMIN_TOKEN": "s3cret", "CCMEM_LLM__API_KEY": "k"}
    )
    masked = settings.masked()
    assert masked["server"]["admin_token"] == "********"
    assert masked["llm"]["api_key"] == "********"
    assert "s3cret" not in repr(masked)
