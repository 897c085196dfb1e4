"""Which token a command sends: one function owns the order, and nothing else reads $CCMEM_TOKEN."""

from __future__ import annotations

import ast
from pathlib import Path

from claude_code_memory.client.remote import TOKEN_ENV, ChosenToken, choose_token

PACKAGE = Path(__file__).resolve().parent.parent / "claude_code_memory"


def test_the_order_is_flag_then_environment_then_admin_token() -> None:
    env = {TOKEN_ENV: "from-env"}
    assert choose_token("from-flag", "admin", environ=env) == ChosenToken("from-flag", "--token", False)
    assert choose_token(None, "admin", environ=env) == ChosenToken("from-env", "$CCMEM_TOKEN", False)
    assert choose_token(None, "admin", environ={}) == ChosenToken("admin", "the admin token", True)
    assert choose_token(None, None, environ={}) is None
    # An empty flag or variable counts as not given, as the shell's `--token "$UNSET"` means.
    assert choose_token("", "admin", environ={TOKEN_ENV: ""}) == ChosenToken("admin", "the admin token", True)


def test_without_the_admin_fallback_only_the_flag_or_the_environment_counts() -> None:
    assert choose_token(None, "admin", environ={}, admin_fallback=False) is None
    assert choose_token(None, "admin", environ={TOKEN_ENV: "user"}, admin_fallback=False) == ChosenToken(
        "user", "$CCMEM_TOKEN", False
    )


def test_the_admin_token_is_known_by_its_value_wherever_it_came_from() -> None:
    assert choose_token("admin", "admin", environ={}).is_admin  # type: ignore[union-attr]
    assert choose_token(None, "admin", environ={TOKEN_ENV: "admin"}).is_admin  # type: ignore[union-attr]
    assert not choose_token("admin", None, environ={}).is_admin  # type: ignore[union-attr]


def test_only_client_remote_reads_the_variable() -> None:
    readers = sorted(
        str(path.relative_to(PACKAGE))
        for path in PACKAGE.rglob("*.py")
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Constant) and node.value == TOKEN_ENV
    )
    # config/ names it once for everyone; the SessionStart hook's script runs as
    # `python -I -S FILE` (the standard library only: it cannot import the package).
    assert readers == ["client/hook_command.py", "config/__init__.py"]
