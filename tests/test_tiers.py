"""The speed tiers: every test is ``unit``, ``integration`` or ``e2e`` by the fixtures it uses
(tests/conftest.py). These pin the rule on tests whose tier is known, so the automatic marking
cannot quietly turn into "everything is unit", and show that a unit test cannot start anything."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import TIERS, tier_of, tier_of_item
from tests.support.fake_anthropic import FakeAnthropic, always_text

TESTS = Path(__file__).resolve().parent


def test_the_slowest_fixture_or_marker_decides() -> None:
    assert tier_of(["tmp_path", "monkeypatch"], []) == "unit"
    assert tier_of(["tmp_path", "memory_server"], []) == "integration"
    assert tier_of(["server"], []) == tier_of(["backup_server"], []) == "integration"
    assert tier_of(["observer", "server_url"], []) == "unit"
    assert tier_of(["start_server"], ["parametrize"]) == "integration"
    assert tier_of(["engine"], []) == "integration"
    assert tier_of([], ["postgres"]) == "integration"
    assert tier_of([], ["integration"]) == "integration"
    assert tier_of(["api", "ui", "browser", "page"], []) == "e2e"
    assert tier_of(["memory_server"], ["e2e"]) == "e2e"


def collected(request: pytest.FixtureRequest, file: str) -> dict[str, str]:
    """The tier of every test in ``file``, collected in this session the way pytest collects it."""
    module = pytest.Module.from_parent(request.session, path=TESTS / file)
    tiers: dict[str, str] = {}
    pending: list[pytest.Item | pytest.Collector] = [module]
    while pending:
        node = pending.pop()
        if isinstance(node, pytest.Item):
            tiers[node.name] = tier_of_item(node)
        else:
            pending.extend(node.collect())
    return tiers


@pytest.mark.parametrize(
    ("file", "test", "tier"),
    [
        ("test_redact.py", "test_redacting_twice_changes_nothing", "unit"),
        ("test_gate.py", "test_rules_decide_captures_deny_first", "unit"),
        # A module-scoped server fixture of the file's own.
        ("test_mcp.py", "test_add_search_list_and_delete[sse]", "integration"),
        # The conftest's function-scoped server, and a module's own ``*_server``.
        ("test_rest_config_backup.py", "test_config_patch_sections_and_reset", "integration"),
        ("test_rest_config_backup.py", "test_import_skip_and_overwrite", "integration"),
        # PostgreSQL reached through getfixturevalue: the param's own marker says so.
        (
            "test_conversation.py",
            "test_adjacent_and_around_walk_one_users_active_conversation[sqlite]",
            "unit",
        ),
        (
            "test_conversation.py",
            "test_adjacent_and_around_walk_one_users_active_conversation[postgresql]",
            "integration",
        ),
        # Starts a child process itself, so marked by hand.
        ("test_ui_boundary.py", "test_importing_the_ui_loads_no_storage_or_engine", "integration"),
        ("test_ui_browser.py", "test_pause_and_resume_an_app", "e2e"),
        ("test_e2e_clients.py", "test_inspector_lists_the_memory_tools[sse]", "e2e"),
    ],
)
def test_known_tests_land_in_their_tier(
    request: pytest.FixtureRequest, file: str, test: str, tier: str
) -> None:
    tiers = collected(request, file)
    assert test in tiers, f"{file} has no {test}: {sorted(tiers)[:10]}"
    assert tiers[test] == tier


def test_every_tier_has_tests_and_each_test_one_tier(request: pytest.FixtureRequest) -> None:
    files = ["test_redact.py", "test_rest_memories.py", "test_ui_browser.py"]
    found = [tier for file in files for tier in collected(request, file).values()]
    assert set(found) == set(TIERS)
    assert found.count("unit") > 100 and found.count("integration") > 5 and found.count("e2e") > 5


def test_this_test_is_unit(request: pytest.FixtureRequest) -> None:
    assert [tier for tier in TIERS if request.node.get_closest_marker(tier)] == ["unit"]


def test_a_unit_test_cannot_start_a_process() -> None:
    with pytest.raises(RuntimeError, match="a unit test started a process"):
        subprocess.run([sys.executable, "-c", "pass"], check=False)


def test_a_unit_test_cannot_start_a_uvicorn_server() -> None:
    with pytest.raises(RuntimeError, match="a unit test started a uvicorn server"):
        FakeAnthropic(always_text("never served")).start()


def test_a_unit_test_cannot_listen() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        with pytest.raises(RuntimeError, match="a unit test listened on a socket"):
            sock.listen(1)
