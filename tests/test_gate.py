"""The policy gate: the pure decision, the rule that only admitted writes reach the engine,
and every write path end to end with secrets scanned for in every store afterwards."""

from __future__ import annotations

import ast
import io
import json
import random
import sqlite3
import uuid
import zipfile
from datetime import datetime, timedelta
from pathlib import Path

import anyio
import httpx
import pytest

from claude_code_memory.errors import BadInput, TooLarge
from claude_code_memory.policy.gate import (
    TRUNCATION_MARKER,
    Admitted,
    Denied,
    Facts,
    Policy,
    Rule,
    Write,
    admit,
    content_hash,
)
from tests.corpora.generate import GENERATORS
from tests.support.server import MemoryServer

PACKAGE = Path(__file__).resolve().parent.parent / "claude_code_memory"
NOW = datetime(2026, 11, 22, 12, 0, 0)
POLICY = Policy(
    require_consent=True,
    consent_channels=frozenset({"capture"}),
    max_chars=200,
    quota_bytes=1000,
    oversize="truncate",
    mask_pii=False,
    retention_days=0,
)


def write(text: str, channel: str = "rest", **extra: object) -> Write:
    return Write(user_id="alice", app="claude-code", text=text, channel=channel, **extra)  # type: ignore[arg-type]


# -- the pure decision -----------------------------------------------------------------------
def test_explicit_writes_are_consent_and_captures_wait() -> None:
    assert admit(write("I like tea"), POLICY, Facts(now=NOW)).state == "active"
    assert admit(write("I like tea"), POLICY, Facts(now=NOW)).consent == "explicit"
    captured = admit(write("I like tea", "capture"), POLICY, Facts(now=NOW))
    assert (captured.state, captured.consent) == ("pending", "pending")
    no_consent = Policy(**{**POLICY.__dict__, "require_consent": False})
    assert admit(write("I like tea", "capture"), no_consent, Facts(now=NOW)).state == "active"


def test_rules_decide_captures_deny_first() -> None:
    rules = (
        Rule("deny-1", "claude-code", "/secret/*", "deny"),
        Rule("allow-1", "claude-code", "*", "allow"),
    )
    facts = Facts(now=NOW, rules=rules)
    allowed = admit(write("notes", "capture", project="/work/app"), POLICY, facts)
    assert (allowed.state, allowed.consent, allowed.rule_id) == ("active", "rule", "allow-1")
    with pytest.raises(Denied):
        admit(write("notes", "capture", project="/secret/payroll"), POLICY, facts)
    assert admit(write("notes", "capture", project="/x"), POLICY, Facts(now=NOW)).state == "pending"


def test_caps_quota_truncation() -> None:
    with pytest.raises(TooLarge, match="max_memory_chars"):
        admit(write("x" * 201), POLICY, Facts(now=NOW))
    truncated = admit(write("y" * 500, "capture"), POLICY, Facts(now=NOW))
    assert truncated.truncated and truncated.text.endswith(TRUNCATION_MARKER) and len(truncated.text) <= 200
    with pytest.raises(TooLarge, match="quota"):
        admit(write("z" * 100), POLICY, Facts(now=NOW, used_bytes=950))
    strict = Policy(**{**POLICY.__dict__, "oversize": "reject"})
    with pytest.raises(TooLarge):
        admit(write("y" * 500, "capture"), strict, Facts(now=NOW))
    with pytest.raises(BadInput):
        admit(write("   "), POLICY, Facts(now=NOW))
    with pytest.raises(BadInput):
        admit(write("ok", "carrier-pigeon"), POLICY, Facts(now=NOW))


def test_redaction_and_retention_and_hash() -> None:
    key = GENERATORS["aws_access_key"](random.Random(1)).value
    admitted = admit(
        write(f"deploy with {key} today", metadata={"note": f"key={key}", "n": 3}),
        Policy(**{**POLICY.__dict__, "retention_days": 30}),
        Facts(now=NOW),
    )
    assert key not in admitted.text and "[REDACTED:aws_access_key]" in admitted.text
    assert key not in json.dumps(admitted.metadata) and admitted.metadata["n"] == 3
    assert admitted.redactions == 2
    assert admitted.expires_at == NOW + timedelta(days=30)
    assert admitted.content_hash == content_hash(admitted.text.upper().replace(" ", "  "))


def test_redactions_made_upstream_count_with_the_gates_own() -> None:
    """The capture proxy redacts before it sends: its count arrives with the write, the gate adds
    its own, and ``redactions`` is the total the owner sees."""
    key = GENERATORS["aws_access_key"](random.Random(1)).value
    upstream = admit(
        write("deploy with [REDACTED:github_token]", "capture", redacted_upstream=2), POLICY, Facts(now=NOW)
    )
    assert upstream.redactions == 2
    both = admit(write(f"deploy with {key}", "capture", redacted_upstream=2), POLICY, Facts(now=NOW))
    assert both.redactions == 3
    assert admit(write("I like tea"), POLICY, Facts(now=NOW)).redactions == 0
    with pytest.raises(BadInput, match="redacted_upstream"):
        admit(write("I like tea", "capture", redacted_upstream=-1), POLICY, Facts(now=NOW))


def test_only_the_gate_makes_admitted_writes() -> None:
    with pytest.raises(TypeError, match="only policy.gate.admit"):
        Admitted(
            write=write("x"),
            text="x",
            metadata={},
            redactions=0,
            truncated=False,
            state="active",
            consent="explicit",
            rule_id=None,
            expires_at=None,
            content_hash="h",
        )


def _calls(tree: ast.AST) -> list[tuple[str, str]]:
    """(receiver source, method) of every call like ``x.y.add(...)``."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            found.append((ast.unparse(node.func.value), node.func.attr))
    return found


def _takes_admitted(function: ast.FunctionDef) -> bool:
    return any(
        arg.annotation is not None and ast.unparse(arg.annotation) == "Admitted"
        for arg in function.args.args + function.args.kwonlyargs
    )


def test_architecture_no_write_reaches_the_engine_without_the_gate() -> None:
    """mem0's write methods are called only inside ``Vectors`` (store/vectors.py), whose write
    methods refuse anything but an ``Admitted``; and every function in the package that calls
    them (or a ``_store``, which stores what it is handed) either runs ``admit`` itself or
    receives an ``Admitted``."""
    engine_writes = {"add", "update"}
    modules = {
        path.relative_to(PACKAGE).as_posix(): ast.parse(path.read_text()) for path in PACKAGE.rglob("*.py")
    }
    offenders = []
    for name, tree in modules.items():
        for receiver, method in _calls(tree):
            engine_write = (
                method in engine_writes and receiver.endswith("memory") and "memory.db" not in receiver
            )
            if engine_write and name != "store/vectors.py":
                offenders.append(f"{name}: {receiver}.{method}")
    assert offenders == []

    vectors_module = modules["store/vectors.py"]
    vectors = next(n for n in vectors_module.body if isinstance(n, ast.ClassDef) and n.name == "Vectors")
    for function in (n for n in vectors.body if isinstance(n, ast.FunctionDef) and n.name in engine_writes):
        assert _takes_admitted(function)
        assert "isinstance(admitted, Admitted)" in ast.unparse(function)
    mem0_callers = [
        f.name
        for f in ast.walk(vectors)
        if isinstance(f, ast.FunctionDef)
        and any(r == "self.memory" and m in engine_writes for r, m in _calls(f))
    ]
    assert sorted(mem0_callers) == ["add", "update"]

    writers = set()
    for name, tree in modules.items():
        for function in (n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)):
            calls = _calls(function)
            if any(r.endswith("vectors") and m in engine_writes for r, m in calls) or any(
                m == "_store" for _, m in calls
            ):
                writers.add(f"{name}:{function.name}")
                runs_gate = any(isinstance(n, ast.Name) and n.id == "admit" for n in ast.walk(function))
                assert _takes_admitted(function) or runs_gate, (
                    f"{name}: {function.name} writes without the gate"
                )
    # The check saw the write paths it guards: it cannot pass by finding nothing.
    assert {
        "memories/write/writes.py:write_memory",  # add_memory answers its results
        "memories/write/writes.py:approve",
        "memories/write/writes.py:rewrite",  # update_memory's work, and the memory tool's edits
        "memories/write/writes.py:add_file",  # the memory tool's new files
        "memories/write/writes.py:_store",
    } <= writers


# -- every write path, end to end ------------------------------------------------------------
def _fakes(seed: int) -> dict[str, str]:
    rng = random.Random(seed)
    names = [
        "anthropic_api_key",
        "aws_access_key",
        "github_token",
        "stripe_live_key",
        "jwt",
        "openai_api_key",
        "sendgrid_api_key",
        "password",
    ]
    return {name: GENERATORS[name](rng).value for name in names}


def _text(fakes: dict[str, str], path: str) -> str:
    return (
        f"[{path}] deploy notes: ANTHROPIC_API_KEY={fakes['anthropic_api_key']} and the AWS key "
        f"{fakes['aws_access_key']}; gh token {fakes['github_token']}, stripe {fakes['stripe_live_key']}, "
        f"session {fakes['jwt']}, mail {fakes['sendgrid_api_key']}; btw the password is {fakes['password']}"
    )


def _secret_pieces(fakes: dict[str, str]) -> list[str]:
    return [value[len(value) // 3 : len(value) // 3 + 16] for value in fakes.values()]


@pytest.fixture(scope="module")
def gated(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    server = MemoryServer(tmp_path_factory.mktemp("gate"))
    server.start()
    yield server
    server.stop()


def test_every_write_path_leaves_no_secret_in_any_store(gated: MemoryServer) -> None:
    token = gated.make_token("gina")
    headers = {"Authorization": f"Bearer {token}"}
    fakes = _fakes(7)
    with httpx.Client(base_url=gated.base_url, headers=headers, timeout=30) as c:
        # REST create (text and metadata)
        created = c.post(
            "/api/v1/memories",
            json={"text": _text(fakes, "rest"), "metadata": {"token": fakes["openai_api_key"]}},
        ).json()
        assert "[REDACTED:" in created["content"] and created["metadata_"]["token"].startswith("[REDACTED")
        # REST update
        plain = c.post("/api/v1/memories", json={"text": "a plain memory to edit later"}).json()
        response = c.put(f"/api/v1/memories/{plain['id']}", json={"memory_content": _text(fakes, "update")})
        assert response.status_code == 200, response.text
        updated = response.json()
        assert fakes["aws_access_key"] not in updated["content"]
        # capture, pending then approved with an edit that adds a secret
        captured = c.post(
            "/api/v1/capture",
            json={
                "app": "claude-code",
                "project": "/work/demo",
                "conversation_id": "conv-1",
                "model": "claude-test",
                "messages": [
                    {"role": "user", "content": _text(fakes, "capture")},
                    {"role": "assistant", "content": "Noted."},
                ],
            },
        ).json()
        assert captured["status"] == "pending"
        # import
        archive = io.BytesIO()
        with zipfile.ZipFile(archive, "w") as z:
            z.writestr(
                "memories.json",
                json.dumps(
                    {
                        "user": {"user_id": "gina"},
                        "apps": [{"id": str(uuid.uuid4()), "name": "imported"}],
                        "categories": [],
                        "memories": [
                            {
                                "id": str(uuid.uuid4()),
                                "content": _text(fakes, "import"),
                                "metadata": {},
                                "state": "active",
                                "app_name": "imported",
                                "created_at": "2026-01-01T00:00:00",
                            }
                        ],
                        "memory_categories": [],
                        "status_history": [],
                        "access_controls": [],
                        "export_meta": {"version": "1"},
                    }
                ),
            )
        imported = c.post(
            "/api/v1/backup/import", files={"file": ("m.zip", archive.getvalue(), "application/zip")}, data={}
        )
        assert imported.status_code == 200, imported.text

    # MCP add_memories
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    async def mcp_add() -> str:
        import httpx2

        client = httpx2.AsyncClient(headers=headers, timeout=30)
        async with (
            streamable_http_client(
                f"{gated.base_url}/mcp/claude-code/http/gina", http_client=client
            ) as streams,
            ClientSession(streams[0], streams[1]) as session,
        ):
            await session.initialize()
            result = await session.call_tool("add_memories", {"text": _text(fakes, "mcp")})
            return result.content[0].text  # type: ignore[union-attr]

    mcp_result = anyio.run(mcp_add)
    assert "[REDACTED:" in mcp_result and fakes["github_token"] not in mcp_result

    with httpx.Client(base_url=gated.base_url, headers=headers, timeout=30) as c:
        listed = c.get("/api/v1/consent/pending").json()["items"]
        assert [item["id"] for item in listed] == [captured["id"]]
        assert not any(piece in json.dumps(listed) for piece in _secret_pieces(fakes))
        approval = c.post(
            f"/api/v1/consent/{captured['id']}/approve", json={"text": _text(fakes, "approved-edit")}
        )
        assert approval.status_code == 200, approval.text
        assert "[REDACTED:" in approval.json()["content"]
        hits = c.post("/api/v1/memories/search", json={"query": "deploy notes AWS key", "limit": 20}).json()
        for hit in hits["results"]:
            assert hit["provenance"]["redactions"] >= 1
            assert not any(piece in json.dumps(hit) for piece in _secret_pieces(fakes))
        channels = {hit["provenance"]["channel"] for hit in hits["results"]}
        assert {"rest", "mcp", "import", "capture"} <= channels

    gated.stop()  # the vector store is locked by its process: read every store once it is down
    data = gated.data_dir
    pieces = _secret_pieces(fakes)
    with sqlite3.connect(data / "memory.db") as db:
        rows = db.execute("SELECT content, metadata FROM memories").fetchall()
        assert len(rows) >= 5
        sql_text = json.dumps(rows)
    with sqlite3.connect(data / "mem0" / "history.db") as db:
        history_text = json.dumps(db.execute("SELECT old_memory, new_memory FROM history").fetchall())
    import claude_code_memory.engine  # noqa: F401 - telemetry settings before mem0 loads
    from claude_code_memory.engine.edge_store import QdrantEdgeStore

    store = QdrantEdgeStore(collection_name="memories", path=str(data / "vectors"), embedding_model_dims=384)
    try:
        payloads = json.dumps([p.payload for p in store.list(top_k=None)[0]])
    finally:
        store.close()
    vector_files = b"".join(path.read_bytes() for path in (data / "vectors").rglob("*") if path.is_file())
    log = gated.log()
    for where, text in (("sql", sql_text), ("history", history_text), ("vectors", payloads), ("log", log)):
        leaked = [piece for piece in pieces if piece in text]
        assert leaked == [], f"secret fragments in {where}"
    assert not [piece for piece in pieces if piece.encode() in vector_files], "secret fragments in the shard"
    assert "[REDACTED:" in sql_text and "[REDACTED:" in history_text
    # The vector store keeps no text at all, redacted or not (edge_store.TEXT_FIELDS).
    assert payloads != "[]" and "[REDACTED:" not in payloads and b"[REDACTED:" not in vector_files
    gated.start()


def test_a_rest_write_of_the_second_audits_variants_stores_no_secret(gated: MemoryServer) -> None:
    # what an outside audit found stored, on disk and in REST answers
    rng = random.Random(30)
    fakes = {
        name: GENERATORS[name](rng)
        for name in (
            "huggingface_token_lowercase",
            "aws_secret_key",
            "letters_password",
            "password",
            "human_password",
            "dashed_passphrase",
            "twilio_api_key",
            "npm_token",
            "pypi_token",
            "discord_webhook",
        )
    }
    values = {name: fake.value for name, fake in fakes.items()}
    text = (
        f"setup notes: use {values['huggingface_token_lowercase']} for the gated model; aws secret key "
        f"{values['aws_secret_key']} for the backup user; my password is {values['letters_password']}; "
        f"mein Passwort ist {values['password']}; パスワードは{values['human_password']}です; the vault "
        f"passphrase is {values['dashed_passphrase']}; twilio {values['twilio_api_key']}; npm token "
        f"{values['npm_token']}; twine upload -p {values['pypi_token']} dist/*; alerts go to "
        f"{values['discord_webhook']}"
    )
    pieces = {name: fake.core[:12] for name, fake in fakes.items()}
    headers = {"Authorization": f"Bearer {gated.make_token('ines')}"}
    with httpx.Client(base_url=gated.base_url, headers=headers, timeout=30) as c:
        created = c.post("/api/v1/memories", json={"text": text})
        assert created.status_code == 200, created.text
        memory_id = created.json()["id"]
        fetched = c.get(f"/api/v1/memories/{memory_id}")
        assert fetched.status_code == 200, fetched.text
    for where, answer in (("POST", created.text), ("GET", fetched.text)):
        assert [name for name, piece in pieces.items() if piece in answer] == [], where
        assert answer.count("[REDACTED:") >= len(fakes), where
    database = f"file:{gated.data_dir / 'memory.db'}?mode=ro"
    with sqlite3.connect(database, uri=True) as db:
        stored = json.dumps(db.execute("SELECT content, metadata FROM memories").fetchall())
    assert [name for name, piece in pieces.items() if piece in stored] == []
    assert "mein Passwort ist [REDACTED:prose_secret]" in stored
