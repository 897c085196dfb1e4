"""Pure parts of the web UI: the sealed session cookie, the redirect guard, the chart, the
copy-paste snippets on the Connect page."""

from __future__ import annotations

import json
import shlex
import time
from pathlib import Path

import pytest

from claude_code_memory.ui.account import _safe_next, connect_snippets
from claude_code_memory.ui.app import when
from claude_code_memory.ui.charts import Point, bar_chart
from claude_code_memory.ui.session import Sealer, Session, same_token
from claude_code_memory.ui.signouts import SignedOut


def test_a_sealed_session_opens_with_the_same_secret_only() -> None:
    session = Session.new("alice", "ccm_secret-token-value")
    sealed = Sealer("s3cret").seal_session(session)
    assert "ccm_secret-token-value" not in sealed and "alice" not in sealed
    assert Sealer("s3cret").open_session(sealed, 60) == session
    assert Sealer("another").open_session(sealed, 60) is None
    assert Sealer(None).open_session(sealed, 60) is None  # a random key per start
    tampered = sealed[:-6] + ("A" if sealed[-6] != "A" else "B") + sealed[-5:]
    assert Sealer("s3cret").open_session(tampered, 60) is None
    assert Sealer("s3cret").open_session("not a cookie", 60) is None
    assert Sealer("s3cret").open_session(None, 60) is None


def test_every_session_has_its_own_id_and_one_without_is_refused() -> None:
    assert Session.new("alice", "t").id != Session.new("alice", "t").id
    sealer = Sealer("s3cret")
    before_ids = sealer.seal({"user_id": "alice", "token": "t", "csrf": "c"})
    assert sealer.open_session(before_ids, 60) is None


def test_signed_out_sessions_are_kept_on_disk_until_they_would_expire(tmp_path: Path) -> None:
    path = tmp_path / "ui" / "signed-out.json"
    signed_out = SignedOut(path)
    assert "a" not in signed_out
    signed_out.add("a", until=time.time() + 3600)
    signed_out.add("gone", until=time.time() - 1)
    assert "a" in signed_out and "gone" not in signed_out and None not in signed_out
    assert "a" in SignedOut(path)  # a restart remembers
    signed_out.add("b", until=time.time() + 3600)
    assert set(json.loads(path.read_text())) == {"a", "b"}  # expired entries are pruned
    assert oct(path.stat().st_mode & 0o777) == "0o600"


def test_signed_out_survives_a_damaged_or_unwritable_file(tmp_path: Path) -> None:
    damaged = tmp_path / "signed-out.json"
    damaged.write_text("{not json")
    assert "a" not in SignedOut(damaged)
    blocked = tmp_path / "a-file"
    blocked.write_text("")
    in_memory = SignedOut(blocked / "signed-out.json")  # its directory cannot be made
    in_memory.add("a", until=time.time() + 60)
    assert "a" in in_memory


def test_a_sealed_session_expires(monkeypatch: pytest.MonkeyPatch) -> None:
    sealer = Sealer("s3cret")
    sealed = sealer.seal_session(Session.new("alice", "t"))
    later = time.time() + 2.1
    monkeypatch.setattr(time, "time", lambda: later)  # Fernet reads the clock through time.time
    assert sealer.open_session(sealed, 1) is None
    assert sealer.open_session(sealed, 60) is not None


def test_csrf_tokens_compare_exactly_and_never_match_nothing() -> None:
    assert same_token("abc", "abc")
    assert not same_token("abc", "abd")
    assert not same_token("", "")
    assert not same_token(None, None)
    assert not same_token("abc", None)
    assert Session.new("a", "t").csrf != Session.new("a", "t").csrf


def test_sign_in_redirects_stay_on_this_site() -> None:
    assert _safe_next("/memories?q=x") == "/memories?q=x"
    for hostile in ("https://evil.example/", "//evil.example/", "/\\evil.example", "", None, "memories"):
        assert _safe_next(hostile) == "/"


def test_bar_chart_scales_to_the_peak_and_escapes_labels() -> None:
    svg = bar_chart([Point("<a>", 1), Point("b", 4), Point("c", 0)], title="T & co")
    assert svg.count("<rect") == 3
    assert 'height="156.0"' in svg  # the peak fills the plot (160 - 4 margin)
    assert "&lt;a&gt;" in svg and "<a>" not in svg and "T &amp; co" in svg
    assert "5 in all, at most 4 on one day" in svg
    empty = bar_chart([], title="none")
    assert "<rect" not in empty and "0 in all" in empty


def test_when_formats_epoch_and_iso_in_utc() -> None:
    assert when(0) == "1970-01-01 00:00 UTC"
    assert when("2026-11-22T07:58:00Z") == "2026-11-22 07:58 UTC"
    assert when("2026-11-22T07:58:00") == "2026-11-22 07:58 UTC"
    assert when(None) == "" and when("garbage") == "garbage"


def test_connect_snippets_carry_the_users_url_and_token_and_survive_the_shell() -> None:
    session = Session.new("alice", "ccm_tok'en$")
    snippets = connect_snippets("http://127.0.0.1:8765", "claude-code", session)
    export, install, mcp_add = snippets["claude_code_setup"].splitlines()
    assert shlex.split(export) == ["export", "CCMEM_TOKEN=ccm_tok'en$"]
    assert export == snippets["token_export"]
    assert shlex.split(install) == ["ccmem", "hooks", "install", "--url", "http://127.0.0.1:8765"]
    assert mcp_add == snippets["claude_code_http"]
    for key, transport in (("claude_code", "sse"), ("claude_code_http", "http")):
        words = shlex.split(snippets[key])
        assert words[:6] == ["claude", "mcp", "add", "--transport", transport, "memory"]
        assert words[6] == f"http://127.0.0.1:8765/mcp/claude-code/{transport}/alice"
        # The shell fills the token in from the export: it is not in the command itself.
        assert words[7:] == ["--header", "Authorization: Bearer $CCMEM_TOKEN"]
        assert "ccm_tok" not in snippets[key]
    cursor = json.loads(snippets["cursor"])["mcpServers"]["memory"]
    assert cursor["url"].endswith("/mcp/cursor/http/alice")
    assert cursor["headers"]["Authorization"] == "Bearer ccm_tok'en$"
    desktop = json.loads(snippets["desktop"])["mcpServers"]["memory"]
    assert desktop["command"] == "npx" and "mcp-remote" in desktop["args"]
