"""REST config and backup against the real server.

Config: PUT saves (OpenMemory's did not), secrets never come back in plaintext, writes need
the admin token, bad shapes are 422. Backup: the export zip has OpenMemory's members, an
import re-embeds every memory into its original app and never half-applies a bad archive.
"""

from __future__ import annotations

import gzip
import io
import json
import sqlite3
import zipfile
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from tests.support.server import MemoryServer
from tests.support.servers import ApiServer, StartServer
from tests.support.users import unique

SECRET = "sk-test-0123456789abcdef"


def api(server: ApiServer, token: str) -> httpx.Client:
    return server.client(token, timeout=120)


def remember(client: httpx.Client, user: str, text: str, app: str = "openmemory") -> dict[str, Any]:
    response = client.post(
        "/api/v1/memories", json={"user_id": user, "text": text, "infer": False, "app": app}
    )
    assert response.status_code == 200, response.text
    return response.json()


def assert_error(response: httpx.Response, status: int, *words: str) -> None:
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) >= {"detail", "error"}, body
    for word in words:
        assert word in body["detail"], body


def stored_config(server: MemoryServer) -> dict[str, Any]:
    """The config row as the server saved it (unmasked), read from its SQLite file."""
    with sqlite3.connect(server.data_dir / "memory.db") as db:
        (value,) = db.execute("SELECT value FROM configs WHERE key = 'main'").fetchone()
    return json.loads(value)


# -- config -------------------------------------------------------------------------------------
# The config tests change the server-wide config, restart the server and compare against its
# defaults. They share one server that each finds as a new one would: without a saved config
# (the server reads the row on every request and makes it from its settings when missing).
@pytest.fixture(scope="module")
def config_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MemoryServer]:
    with MemoryServer(tmp_path_factory.mktemp("config-server")) as started:
        yield started


@pytest.fixture
def server(config_server: MemoryServer) -> MemoryServer:
    with sqlite3.connect(config_server.data_dir / "memory.db") as db:
        db.execute("DELETE FROM configs")
    return config_server


def test_config_defaults_come_from_the_server_settings(server: MemoryServer) -> None:
    user = api(server, server.make_token("alice"))
    response = user.get("/api/v1/config")
    assert response.status_code == 200, response.text
    config = response.json()
    assert config["openmemory"] == {"custom_instructions": None}
    assert config["mem0"]["llm"]["provider"] == "none"
    assert config["mem0"]["embedder"]["provider"] == "onnx-minilm"
    assert config["mem0"]["embedder"]["config"]["model"] == "all-MiniLM-L6-v2"
    assert config["mem0"]["vector_store"] is None
    assert "openai" not in response.text
    assert stored_config(server) == config  # GET created the row

    assert user.get("/api/v1/config/").json() == config
    assert user.get("/api/v1/config/mem0/llm").json() == config["mem0"]["llm"]
    assert user.get("/api/v1/config/mem0/embedder").json() == config["mem0"]["embedder"]
    assert user.get("/api/v1/config/mem0/vector_store").json() is None
    assert user.get("/api/v1/config/openmemory").json() == {"custom_instructions": None}

    effective = user.get("/api/v1/config/effective")
    assert effective.status_code == 200, effective.text
    assert effective.json()["server"]["admin_token"] == "********"
    assert effective.json()["embedder"]["provider"] == "onnx-minilm"
    assert server.admin_token not in effective.text
    assert server.client().get("/api/v1/config", timeout=30).status_code == 401


def test_config_put_saves_masks_secrets_and_survives_a_restart(server: MemoryServer) -> None:
    admin = api(server, server.admin_token)
    wanted = {
        "openmemory": {"custom_instructions": "Only remember facts about code."},
        "mem0": {
            "llm": {
                "provider": "openai",
                "config": {"model": "gpt-4o-mini", "temperature": 0.2, "max_tokens": 500, "api_key": SECRET},
            },
            "embedder": {"provider": "onnx-minilm", "config": {"model": "all-MiniLM-L6-v2"}},
            "vector_store": None,
        },
    }
    response = admin.put("/api/v1/config", json=wanted)
    assert response.status_code == 200, response.text
    saved = response.json()
    assert SECRET not in response.text
    assert saved["mem0"]["llm"]["config"]["api_key"] == "********"
    assert saved["mem0"]["llm"]["config"]["temperature"] == 0.2
    assert saved["openmemory"]["custom_instructions"] == "Only remember facts about code."
    assert stored_config(server)["mem0"]["llm"]["config"]["api_key"] == SECRET
    assert admin.get("/api/v1/config").json() == saved
    assert SECRET not in admin.get("/api/v1/config/mem0/llm").text

    # The UI sends back what it read: the mask keeps the stored key.
    echoed = json.loads(json.dumps(saved))
    echoed["mem0"]["llm"]["config"]["temperature"] = 0.3
    again = admin.put("/api/v1/config/", json=echoed)
    assert again.status_code == 200, again.text
    assert again.json()["mem0"]["llm"]["config"]["temperature"] == 0.3
    assert stored_config(server)["mem0"]["llm"]["config"]["api_key"] == SECRET

    server.restart()
    after = admin.get("/api/v1/config")
    assert after.status_code == 200, after.text
    assert after.json() == again.json()
    assert stored_config(server)["mem0"]["llm"]["config"]["api_key"] == SECRET

    # An env: reference is not a secret and reads back as written.
    echoed["mem0"]["llm"]["config"]["api_key"] = "env:OPENAI_API_KEY"
    by_reference = admin.put("/api/v1/config", json=echoed).json()
    assert by_reference["mem0"]["llm"]["config"]["api_key"] == "env:OPENAI_API_KEY"


def test_config_patch_sections_and_reset(server: MemoryServer) -> None:
    admin = api(server, server.admin_token)
    defaults = admin.get("/api/v1/config").json()

    patched = admin.patch("/api/v1/config", json={"mem0": {"llm": {"config": {"temperature": 0.7}}}})
    assert patched.status_code == 200, patched.text
    llm = patched.json()["mem0"]["llm"]
    assert llm["provider"] == "none" and llm["config"]["temperature"] == 0.7
    assert llm["config"]["max_tokens"] == defaults["mem0"]["llm"]["config"]["max_tokens"]
    assert patched.json()["mem0"]["embedder"] == defaults["mem0"]["embedder"]

    ollama = {
        "provider": "ollama",
        "config": {"model": "llama3.1", "ollama_base_url": "http://127.0.0.1:11434"},
    }
    response = admin.put("/api/v1/config/mem0/llm", json=ollama)
    assert response.status_code == 200, response.text
    assert response.json() == ollama
    assert admin.get("/api/v1/config").json()["mem0"]["llm"] == ollama

    store = {"provider": "qdrant", "config": {"url": "http://qdrant:6333", "api_key": "qdrant-key-123"}}
    response = admin.put("/api/v1/config/mem0/vector_store", json=store)
    assert response.status_code == 200, response.text
    assert response.json() == {
        "provider": "qdrant",
        "config": {"url": "http://qdrant:6333", "api_key": "********"},
    }
    assert stored_config(server)["mem0"]["vector_store"]["config"]["api_key"] == "qdrant-key-123"

    embedder = {"provider": "ollama", "config": {"model": "nomic-embed-text", "embedding_dims": 768}}
    response = admin.put("/api/v1/config/mem0/embedder", json=embedder)
    assert response.status_code == 200, response.text
    assert response.json() == embedder

    response = admin.put("/api/v1/config/openmemory", json={"custom_instructions": "Be brief."})
    assert response.status_code == 200, response.text
    assert response.json() == {"custom_instructions": "Be brief."}

    cleared = admin.patch("/api/v1/config", json={"mem0": {"vector_store": None}})
    assert cleared.json()["mem0"]["vector_store"] is None
    assert cleared.json()["openmemory"]["custom_instructions"] == "Be brief."

    reset = admin.post("/api/v1/config/reset")
    assert reset.status_code == 200, reset.text
    assert reset.json() == defaults
    assert admin.get("/api/v1/config").json() == defaults


def test_config_rejects_bad_shapes_and_non_admin_writes(server: MemoryServer) -> None:
    admin = api(server, server.admin_token)
    user = api(server, server.make_token("alice"))
    before = admin.get("/api/v1/config").json()
    llm = {"provider": "openai", "config": {"model": "gpt-4o-mini"}}

    writes: list[Callable[[httpx.Client], httpx.Response]] = [
        lambda c: c.put("/api/v1/config", json={"mem0": {"llm": llm}}),
        lambda c: c.patch("/api/v1/config", json={"mem0": {"llm": llm}}),
        lambda c: c.post("/api/v1/config/reset"),
        lambda c: c.put("/api/v1/config/mem0/llm", json=llm),
        lambda c: c.put("/api/v1/config/mem0/embedder", json={"provider": "openai", "config": {}}),
        lambda c: c.put("/api/v1/config/mem0/vector_store", json={"provider": "qdrant", "config": {}}),
        lambda c: c.put("/api/v1/config/openmemory", json={"custom_instructions": "x"}),
    ]
    for write in writes:
        assert_error(write(user), 403, "admin")

    bad = [
        ({"mem0": {"llm": {"provider": "skynet", "config": {}}}}, ("skynet", "provider")),
        ({"mem0": {"embedder": {"provider": "word2vec"}}}, ("word2vec",)),
        ({"mem0": {"vector_store": {"provider": "floppy", "config": {}}}}, ("floppy",)),
        (
            {"mem0": {"llm": {"provider": "ollama", "config": {"ollama_base_url": "file:///etc/passwd"}}}},
            ("ollama_base_url", "http"),
        ),
        ({"mem0": {"llm": {"provider": "openai", "config": {"base_url": "not a url"}}}}, ("base_url",)),
        ({"mem0": {"llm": {"provider": "openai", "config": {"temperature": 9}}}}, ("temperature",)),
        ({"mem0": {"graph_store": {}}}, ("graph_store", "unknown")),
        ({"colour": "blue"}, ("colour",)),
    ]
    for body, words in bad:
        assert_error(admin.put("/api/v1/config", json=body), 422, *words)
        assert_error(admin.patch("/api/v1/config", json=body), 422, *words)
    assert_error(admin.put("/api/v1/config/mem0/llm", json={"provider": "skynet"}), 422, "skynet")
    assert_error(
        admin.put(
            "/api/v1/config/mem0/vector_store", json={"provider": "qdrant", "config": {"url": "gopher://x"}}
        ),
        422,
        "url",
    )
    assert_error(admin.put("/api/v1/config", json=["not", "an", "object"]), 422, "object")
    malformed = admin.put(
        "/api/v1/config", content=b'{"mem0": ', headers={"Content-Type": "application/json"}
    )
    assert malformed.status_code == 422, malformed.text
    assert "Traceback" not in malformed.text

    assert admin.get("/api/v1/config").json() == before


# The stock OpenMemory UI's dropdowns (its form-view.tsx), sent as each label lower-cased.
STOCK_UI_LLMS = (
    "openai", "anthropic", "azure openai", "ollama", "together", "groq", "litellm", "google ai",
    "aws bedrock", "gemini", "deepseek", "xai", "lm studio", "langchain",
)  # fmt: skip
STOCK_UI_EMBEDDERS = (
    "openai", "azure openai", "ollama", "hugging face", "vertexai", "gemini", "lmstudio", "together",
    "langchain", "aws bedrock",
)  # fmt: skip


def test_every_provider_the_stock_ui_offers_saves_under_mem0s_name(server: MemoryServer) -> None:
    admin = api(server, server.admin_token)
    listed = api(server, server.make_token("ursula")).get("/api/v1/config/providers").json()
    assert listed["ours"] == {"llm": "none", "embedder": "onnx-minilm", "vector_store": None}
    assert (
        "none" in listed["llm"] and "onnx-minilm" in listed["embedder"] and "qdrant" in listed["vector_store"]
    )
    for section, choices in (("llm", STOCK_UI_LLMS), ("embedder", STOCK_UI_EMBEDDERS)):
        for choice in choices:
            saved = admin.put(f"/api/v1/config/mem0/{section}", json={"provider": choice, "config": {}})
            assert saved.status_code == 200, (choice, saved.text)
            name = saved.json()["provider"]
            assert name == listed["aliases"].get(choice, choice) and name in listed[section], choice
    # mem0 2.2.1 has no Mistral LLM: refused with the list to choose from.
    assert_error(admin.put("/api/v1/config/mem0/llm", json={"provider": "mistral ai"}), 422, "mistral ai")
    admin.post("/api/v1/config/reset")


# -- backup -------------------------------------------------------------------------------------
def export(client: httpx.Client, **body: Any) -> zipfile.ZipFile:
    response = client.post("/api/v1/backup/export", json=body)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "application/zip"
    return zipfile.ZipFile(io.BytesIO(response.content))


def lines_of(archive: zipfile.ZipFile) -> list[dict[str, Any]]:
    raw = gzip.decompress(archive.read("memories.jsonl.gz")).decode("utf-8")
    return [json.loads(line) for line in raw.splitlines() if line.strip()]


def upload(
    client: httpx.Client,
    data: bytes,
    *,
    user_id: str | None = None,
    mode: str = "overwrite",
    name: str = "b.zip",
) -> httpx.Response:
    form = {"user_id": user_id} if user_id else {}
    return client.post(
        "/api/v1/backup/import",
        params={"mode": mode},
        files={"file": (name, data, "application/zip")},
        data=form,
    )


def make_zip(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return buffer.getvalue()


def document(*memories: dict[str, Any]) -> bytes:
    return json.dumps({"apps": [], "memories": list(memories)}).encode()


def search(client: httpx.Client, user: str, query: str) -> list[dict[str, Any]]:
    response = client.post("/api/v1/memories/search", json={"user_id": user, "query": query, "limit": 5})
    assert response.status_code == 200, response.text
    return response.json()["results"]


def total_memories(admin: httpx.Client, user: str) -> int:
    response = admin.get("/api/v1/stats", params={"user_id": user})
    if response.status_code == 404:
        return 0
    assert response.status_code == 200, response.text
    return response.json()["total_memories"]


# The backup tests share one app, in process: each works with users of its own.
@pytest.fixture(scope="module")
def backup_server(start_module_server: StartServer) -> ApiServer:
    return start_module_server(in_process=True)


def test_export_zip_has_openmemorys_members_without_deleted_memories(backup_server: ApiServer) -> None:
    alice_id = unique("alice")
    bob_id = unique("bob")
    alice = api(backup_server, backup_server.make_token(alice_id))
    bob = api(backup_server, backup_server.make_token(bob_id))
    admin = api(backup_server, backup_server.admin_token)
    kept = remember(alice, alice_id, "I write commit messages in the imperative mood", "cursor")
    archived = remember(alice, alice_id, "The old CI ran on Jenkins", "claude-code")
    doomed = remember(alice, alice_id, "Delete me: a throwaway note", "cursor")
    response = alice.post(
        "/api/v1/memories/actions/pause", json={"memory_ids": [archived["id"]], "state": "archived"}
    )
    assert response.status_code == 200, response.text
    response = alice.request("DELETE", "/api/v1/memories", json={"memory_ids": [doomed["id"]]})
    assert response.status_code == 200, response.text

    response = alice.post("/api/v1/backup/export", json={})
    assert response.status_code == 200, response.text
    assert f'filename="memories_export_{alice_id}.zip"' in response.headers["content-disposition"]
    archive = zipfile.ZipFile(io.BytesIO(response.content))
    assert sorted(archive.namelist()) == ["memories.json", "memories.jsonl.gz"]

    data = json.loads(archive.read("memories.json"))
    assert set(data) >= {
        "user",
        "apps",
        "categories",
        "memories",
        "memory_categories",
        "status_history",
        "access_controls",
        "export_meta",
    }
    assert data["user"]["user_id"] == alice_id
    assert data["access_controls"] == []
    assert data["export_meta"]["version"] == "1"
    assert data["export_meta"]["source"] == "claude-code-memory"
    assert data["export_meta"]["exported_at"]
    by_id = {m["id"]: m for m in data["memories"]}
    assert set(by_id) == {kept["id"], archived["id"]}
    assert by_id[archived["id"]]["state"] == "archived"
    assert all(isinstance(m["category_ids"], list) for m in data["memories"])
    category_ids = {c["id"] for c in data["categories"]}
    assert {link["category_id"] for link in data["memory_categories"]} <= category_ids
    assert {a["name"] for a in data["apps"]} == {"cursor", "claude-code"}
    assert any(
        h["memory_id"] == archived["id"] and h["new_state"] == "archived" for h in data["status_history"]
    )

    lines = {line["id"]: line for line in lines_of(archive)}
    assert set(lines) == {kept["id"], archived["id"]}
    line = lines[kept["id"]]
    assert set(line) == {
        "id",
        "content",
        "metadata",
        "created_at",
        "updated_at",
        "state",
        "app",
        "categories",
    }
    assert line["app"] == "cursor" and line["content"] == "I write commit messages in the imperative mood"
    assert lines[archived["id"]]["app"] == "claude-code"
    assert "throwaway" not in json.dumps(data) + json.dumps(list(lines.values()))

    only_cursor = export(alice, app_id=kept["app_id"])
    assert [m["id"] for m in json.loads(only_cursor.read("memories.json"))["memories"]] == [kept["id"]]
    assert export(admin, user_id=alice_id).namelist()
    assert_error(bob.post("/api/v1/backup/export", json={"user_id": alice_id}), 403)
    assert_error(admin.post("/api/v1/backup/export", json={}), 422, "user_id")
    assert_error(alice.post("/api/v1/backup/export", json={"app_id": "nope"}), 422, "app_id")
    assert_error(alice.post("/api/v1/backup/export", json={"from_date": "yesterday"}), 422, "from_date")


def test_import_round_trip_into_a_fresh_user(backup_server: ApiServer) -> None:
    alice_id = unique("alice")
    carol_id = unique("carol")
    dave_id = unique("dave")
    alice = api(backup_server, backup_server.make_token(alice_id))
    admin = api(backup_server, backup_server.admin_token)
    remember(alice, alice_id, "My cat is called Miso and she likes tuna", "cursor")
    archived = remember(alice, alice_id, "I used to work at Initech on TPS reports", "claude-code")
    alice.post("/api/v1/memories/actions/pause", json={"memory_ids": [archived["id"]], "state": "archived"})
    zipped = alice.post("/api/v1/backup/export", json={}).content

    response = upload(admin, zipped, user_id=carol_id, mode="skip")
    assert response.status_code == 200, response.text
    assert response.json()["message"] == f'Import completed into user "{carol_id}"'
    assert response.json()["imported"] == 2 and response.json()["skipped"] == 0

    carol = api(backup_server, backup_server.make_token(carol_id))
    hits = search(carol, carol_id, "what is my cat's name?")
    assert hits and hits[0]["content"] == "My cat is called Miso and she likes tuna"
    assert hits[0]["app"] == "cursor"
    assert hits[0]["metadata"].get("channel") == "import"
    # Archived memories come back archived, so search does not return them.
    assert all("Initech" not in hit["content"] for hit in search(carol, carol_id, "where did I work?"))

    apps = {app["name"]: app for app in carol.get("/api/v1/apps").json()["apps"]}
    assert {"cursor", "claude-code"} <= set(apps)
    old_job = carol.get(f"/api/v1/apps/{apps['claude-code']['id']}/memories").json()["memories"]
    assert [(m["content"], m["state"]) for m in old_job] == [
        ("I used to work at Initech on TPS reports", "archived")
    ]
    assert total_memories(admin, carol_id) == 2
    # Alice's own memories are untouched.
    assert total_memories(admin, alice_id) == 2

    # A user token imports into its own user by default.
    dave = api(backup_server, backup_server.make_token(dave_id))
    response = upload(dave, zipped)
    assert response.status_code == 200, response.text
    assert response.json()["message"] == f'Import completed into user "{dave_id}"'
    assert total_memories(admin, dave_id) == 2


def test_import_skip_and_overwrite(backup_server: ApiServer) -> None:
    alice_id = unique("alice")
    bob_id = unique("bob")
    alice = api(backup_server, backup_server.make_token(alice_id))
    bob = api(backup_server, backup_server.make_token(bob_id))
    admin = api(backup_server, backup_server.admin_token)
    tea = remember(alice, alice_id, "I like green tea in the morning", "cursor")
    remember(alice, alice_id, "My editor is Vim", "cursor")
    zipped = alice.post("/api/v1/backup/export", json={}).content
    edited = alice.put(f"/api/v1/memories/{tea['id']}", json={"memory_content": "I like strong coffee"})
    assert edited.status_code == 200, edited.text

    skipped = upload(alice, zipped, mode="skip")
    assert skipped.status_code == 200, skipped.text
    assert (skipped.json()["imported"], skipped.json()["skipped"]) == (0, 2)
    assert alice.get(f"/api/v1/memories/{tea['id']}").json()["text"] == "I like strong coffee"

    overwritten = upload(alice, zipped, mode="overwrite")
    assert overwritten.status_code == 200, overwritten.text
    assert (overwritten.json()["imported"], overwritten.json()["skipped"]) == (2, 0)
    assert alice.get(f"/api/v1/memories/{tea['id']}").json()["text"] == "I like green tea in the morning"
    assert (
        search(alice, alice_id, "what do I drink in the morning?")[0]["content"]
        == "I like green tea in the morning"
    )
    assert total_memories(admin, alice_id) == 2

    # Into another user the ids are new, so duplicates are found by their normalised text.
    assert upload(bob, zipped, mode="skip").json()["imported"] == 2
    variant = make_zip({"memories.json": document({"content": "  my EDITOR is   vim ", "state": "active"})})
    response = upload(bob, variant, mode="skip")
    assert (response.json()["imported"], response.json()["skipped"]) == (0, 1)
    response = upload(bob, variant, mode="overwrite")
    assert (response.json()["imported"], response.json()["skipped"]) == (1, 0)
    assert total_memories(admin, bob_id) == 2
    assert {hit["content"] for hit in search(bob, bob_id, "which editor do I use?")} >= {
        "  my EDITOR is   vim "
    }


def test_import_rejects_bad_archives_and_writes_nothing(backup_server: ApiServer) -> None:
    alice_id = unique("alice")
    erin_id = unique("erin")
    admin = api(backup_server, backup_server.admin_token)
    alice = api(backup_server, backup_server.make_token(alice_id))
    good = {"content": "A perfectly fine memory", "state": "active"}
    memories_json = document(good)
    lines = gzip.compress(b'{"content": "from the lines file", "app": "cursor"}\n')

    cases: list[tuple[bytes, tuple[str, ...]]] = [
        (b"this is not a zip file", ("not a zip",)),
        (make_zip({"readme.txt": b"hello"}), ("memories.json",)),
        (make_zip({"memories.json": b"{not json"}), ("memories.json", "JSON")),
        (make_zip({"memories.json": b"[1, 2]"}), ("memories.json", "object")),
        (make_zip({"memories.json": json.dumps({"memories": "many"}).encode()}), ("memories",)),
        (
            make_zip({"memories.json": document(good, {"content": "x", "state": "bogus"})}),
            ("memories[1]", "bogus"),
        ),
        (make_zip({"memories.json": document(good, {"content": ""})}), ("memories[1]", "content")),
        (make_zip({"memories.json": document(good, {"content": 42})}), ("memories[1]", "content")),
        (make_zip({"memories.json": document(good, {"content": "x", "metadata": [1]})}), ("metadata",)),
        (
            make_zip({"memories.json": document(good, {"content": "x", "created_at": "last tuesday"})}),
            ("created_at",),
        ),
        (
            make_zip({"memories.json": memories_json, "memories.jsonl.gz": b"not gzip"}),
            ("memories.jsonl.gz",),
        ),
        (
            make_zip({"memories.json": memories_json, "memories.jsonl.gz": gzip.compress(b"{broken\n")}),
            ("memories.jsonl.gz", "line 1"),
        ),
    ]
    for data, words in cases:
        assert_error(upload(admin, data, user_id=erin_id), 422, *words)
    assert total_memories(admin, erin_id) == 0

    assert_error(
        upload(admin, make_zip({"memories.json": memories_json}), user_id=erin_id, mode="merge"), 422, "mode"
    )
    assert_error(upload(alice, make_zip({"memories.json": memories_json}), user_id=erin_id), 403)
    assert_error(upload(admin, make_zip({"memories.json": memories_json})), 422, "user_id")
    missing_file = admin.post("/api/v1/backup/import", data={"user_id": erin_id})
    assert_error(missing_file, 422, "file")
    assert total_memories(admin, erin_id) == 0

    # A paused target app refuses the whole import up front.
    app_id = remember(alice, alice_id, "Something through cursor", "cursor")["app_id"]
    assert alice.put(f"/api/v1/apps/{app_id}", params={"is_active": "false"}).status_code == 200
    mixed = make_zip(
        {
            "memories.json": json.dumps(
                {
                    "apps": [{"id": "a1", "name": "claude-code"}, {"id": "a2", "name": "cursor"}],
                    "memories": [
                        {"content": "First, into claude-code", "app_id": "a1"},
                        {"content": "Second, into the paused cursor app", "app_id": "a2"},
                    ],
                }
            ).encode()
        }
    )
    assert_error(upload(alice, mixed), 403, "cursor", "paused")
    assert total_memories(admin, alice_id) == 1

    # The lines file alone is a usable archive too.
    response = upload(admin, make_zip({"export/memories.jsonl.gz": lines}), user_id=erin_id)
    assert response.status_code == 200, response.text
    assert response.json()["imported"] == 1
    erin_apps = admin.get("/api/v1/apps", params={"user_id": erin_id}).json()["apps"]
    assert [app["name"] for app in erin_apps] == ["cursor"]


def test_import_over_the_size_cap_is_413(start_server: StartServer) -> None:
    # max_body_bytes 1024 makes the import cap 50 KiB.
    server = start_server(env={"CCMEM_SERVER__MAX_BODY_BYTES": "1024"}, in_process=True)
    admin = api(server, server.admin_token)
    big = make_zip({"memories.json": document({"content": "x"}), "padding.bin": bytes(range(256)) * 400})
    assert len(big) > 50 * 1024
    response = upload(admin, big, user_id="alice")
    assert_error(response, 413)
    assert total_memories(admin, "alice") == 0
