"""Pure parts of the web UI: the sealed session cookie, the redirect guard, the chart, the
copy-paste snippets on the Connect page, and the helpers of the scope, link, trash and hygiene
pages."""

from __future__ import annotations

import json
import shlex
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from claude_code_memory.ui.account import _safe_next, connect_commands, connect_snippets
from claude_code_memory.ui.app import when
from claude_code_memory.ui.charts import Point, bar_chart
from claude_code_memory.ui.hygiene import decided_message, run_summary, undoable
from claude_code_memory.ui.links import memory_id_from
from claude_code_memory.ui.scopes import BadScope, matches_scope, memories, move_target, scope_label
from claude_code_memory.ui.session import Sealer, Session, same_token
from claude_code_memory.ui.signouts import SignedOut
from claude_code_memory.ui.trash import purged_after


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
        # User scope: the tools are there in every project, not only where the command ran.
        assert words[:8] == ["claude", "mcp", "add", "--scope", "user", "--transport", transport, "memory"]
        # The claude-code tool set (docs/mcp.md): the four tools a model needs beside the hooks.
        assert words[8] == f"http://127.0.0.1:8765/mcp/claude-code/{transport}/alice?tools=claude-code"
        # The shell fills the token in from the export: it is not in the command itself.
        assert words[9:] == ["--header", "Authorization: Bearer $CCMEM_TOKEN"]
        assert "ccm_tok" not in snippets[key]
    cursor = json.loads(snippets["cursor"])["mcpServers"]["memory"]
    assert cursor["url"].endswith("/mcp/cursor/http/alice")
    assert cursor["headers"]["Authorization"] == "Bearer ccm_tok'en$"
    desktop = json.loads(snippets["desktop"])["mcpServers"]["memory"]
    assert desktop["command"] == "npx" and "mcp-remote" in desktop["args"]


def test_the_connect_commands_carry_no_token_and_quote_the_server() -> None:
    commands = connect_commands("https://memory.example.org:8765")
    assert commands["here"] == "ccmem connect claude-code"
    assert shlex.split(commands["elsewhere"]) == [
        "ccmem",
        "connect",
        "claude-code",
        "--server",
        "https://memory.example.org:8765",
        "--token",
        "TOKEN",
    ]
    assert "TOKEN" in commands["elsewhere"] and "ccm_" not in " ".join(commands.values())
    # A server on loopback is reached from this machine only: no command for another one.
    assert "elsewhere" not in connect_commands("http://127.0.0.1:8765")
    assert "elsewhere" not in connect_commands("http://localhost:8765")


def test_scopes_read_as_words_and_a_move_target_needs_its_project() -> None:
    assert scope_label(None, None) == "global" and scope_label("", None) == "global"
    assert scope_label("shop", None) == "shop" and scope_label("shop", "checkout") == "shop / checkout"
    assert move_target("  ", "") == (None, None)  # blank: global
    assert move_target(" shop ", " checkout ") == ("shop", "checkout")
    with pytest.raises(BadScope):
        move_target("", "checkout")
    assert memories(1) == "1 memory" and memories(0) == "0 memories" and memories(2) == "2 memories"


def test_a_search_hit_matches_the_scope_filters_by_its_provenance() -> None:
    anywhere = {"provenance": {"project": None, "task": None}}
    project = {"provenance": {"project": "shop", "task": None}}
    task = {"provenance": {"project": "shop", "task": "checkout"}}
    hits = {"anywhere": anywhere, "project": project, "task": task}

    def kept(scope: str | None, task_name: str | None = None) -> set[str]:
        return {name for name, hit in hits.items() if matches_scope(hit, scope, task_name)}

    assert kept(None) == {"anywhere", "project", "task"}
    assert kept("global") == {"anywhere"}
    assert kept("project") == {"project"}
    assert kept("task") == {"task"}
    assert kept(None, "checkout") == {"task"} and kept(None, "other") == set()
    assert matches_scope({}, "global", None)  # a hit without provenance is global


def test_a_link_target_is_the_id_in_what_was_pasted() -> None:
    memory_id = "0add16fe-1927-4b29-aaca-a2395a8d67d6"
    assert memory_id_from(memory_id) == memory_id
    assert memory_id_from(f"  http://127.0.0.1:3000/memories/{memory_id.upper()}  ") == memory_id
    assert memory_id_from(memory_id.replace("-", "")) == memory_id.replace("-", "")
    for nothing in ("", None, "the deploy one", "0add16fe-1927"):
        assert memory_id_from(nothing) is None


def test_the_trash_says_when_the_sweep_may_erase() -> None:
    assert purged_after("2026-11-24T02:56:00", 7) == "2026-12-01T02:56:00"
    assert purged_after("2026-11-24T02:56:00Z", 1) == "2026-11-25T02:56:00+00:00"
    assert purged_after("2026-11-24T02:56:00", 0) is None  # the trash is off
    assert purged_after(None, 7) is None and purged_after("not a date", 7) is None


def test_hygiene_undo_window_and_messages() -> None:
    now = datetime(2026, 11, 24, 12, 0, tzinfo=UTC)
    applied = {"status": "applied", "undo_until": "2026-11-30T00:00:00"}
    assert undoable(applied, now)
    assert not undoable({**applied, "undo_until": "2026-11-24T11:59:00"}, now)  # window closed
    assert not undoable({**applied, "status": "undone"}, now)
    assert not undoable({"status": "open", "undo_until": None}, now)

    quiet = {"memories": 12, "proposed": {"duplicate": 0, "junk": 0}, "auto_applied": 0}
    assert run_summary(quiet) == "Looked at 12 memories: nothing new to propose."
    busy = {"memories": 30, "proposed": {"duplicate": 1, "superseded": 0, "junk": 2}, "auto_applied": 2}
    assert run_summary(busy) == (
        "Looked at 30 memories and proposed: 1 duplicate, 2 junk. "
        "Your standing rules applied 2 of them (undoable)."
    )

    ok = {"succeeded": 2, "results": [{"id": "a", "ok": True}, {"id": "b", "ok": True}]}
    assert decided_message("Applied", ok) == ("Applied 2 proposal(s).", "ok")
    failed = {"succeeded": 0, "results": [{"id": "0123456789", "ok": False, "error": "not open"}]}
    assert decided_message("Rejected", failed) == (
        "Rejected 0 proposal(s). Failed: 01234567: not open",
        "error",
    )
