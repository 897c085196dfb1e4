"""The engine against the real model, a real Qdrant Edge shard in tmp_path and mem0 itself."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from qdrant_edge import EdgeShard, PayloadSchemaType, Point, ScrollRequest, UpdateOperation

from claude_code_memory.config import Settings
from claude_code_memory.engine import Engine, mem0_config
from claude_code_memory.engine.edge_points import (
    RETIRED_PAYLOAD_INDEXES,
    index_on_disk,
)
from claude_code_memory.engine.edge_store import (
    DEFAULT_PAYLOAD_INDEXES,
    TEXT_FIELDS,
    QdrantEdgeStore,
)
from claude_code_memory.engine.embedder import OnnxMiniLmEmbedder
from claude_code_memory.engine.factory import NoLlm
from claude_code_memory.engine.onnx_model import (
    MODEL_SHA256,
    build_model,
    default_model_path,
    load_session,
    source_model_path,
    verify_file,
)
from claude_code_memory.errors import BadInput, ConfigError, NotFound, Unavailable

REPO = Path(__file__).resolve().parent.parent
# qdrant-client checks the server version from a background thread, so the warning from the
# unreachable-server test can surface during a later test.
pytestmark = pytest.mark.filterwarnings("ignore:Failed to obtain server version:UserWarning")


def same_hits(ours: list[tuple[str, float]], theirs: list[tuple[str, float]]) -> bool:
    """The same ids in the same order and the same scores within float32 rounding: a search is
    answered by Edge or by the exact scan's copy (once it is read), which sum in other orders."""
    return [i for i, _ in ours] == [i for i, _ in theirs] and all(
        abs(a - b) < 1e-5 for (_, a), (_, b) in zip(ours, theirs, strict=True)
    )


def settings_for(data_dir: Path, **sections: dict[str, Any]) -> Settings:
    return Settings.model_validate({"server": {"data_dir": str(data_dir)}, **sections})


@pytest.fixture(scope="module")
def embedder() -> OnnxMiniLmEmbedder:
    return OnnxMiniLmEmbedder()


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[Engine]:
    with Engine.open(settings_for(tmp_path)) as opened:
        yield opened


def add(engine: Engine, text: str, user: str, **metadata: Any) -> str:
    result = engine.memory.add(text, user_id=user, infer=False, metadata=metadata or None)
    return result["results"][0]["id"]


def search_ids(engine: Engine, query: str, **filters: Any) -> list[str]:
    found = engine.memory.search(query, filters=filters, top_k=10)["results"]
    return [item["id"] for item in found]


# -- the embedder ------------------------------------------------------------------------------
def test_embeddings_are_unit_vectors_that_tell_paraphrases_from_unrelated_text(
    embedder: OnnxMiniLmEmbedder,
) -> None:
    def vector(text: str) -> np.ndarray:
        values = embedder.embed(text)
        assert len(values) == 384 and all(isinstance(x, float) for x in values)
        return np.array(values)

    a = vector("The user prefers dark mode in the editor")
    paraphrase = vector("In the editor, the user likes a dark theme")
    unrelated = [vector("Quarterly revenue grew by ten percent"), vector("The capital of France is Paris")]
    assert abs(np.linalg.norm(a) - 1) < 1e-5
    assert a @ paraphrase > 0.75
    assert all(a @ other < 0.2 for other in unrelated)


@pytest.mark.integration
def test_batches_match_single_embeddings_and_the_cache_skips_the_model(tmp_path: Path) -> None:
    texts = ["short", "a much longer sentence, with many words, that makes the others pad", "short"]
    uncached = OnnxMiniLmEmbedder(cache_size=0)
    batch = np.array(uncached.embed_batch(texts))
    single = np.array([uncached.embed(text) for text in texts])
    assert np.abs(batch - single).max() < 1e-5

    cached = OnnxMiniLmEmbedder(cache_size=2)
    cached.embed_batch(texts)
    assert cached.cache_misses == 2  # the repeated text ran once
    cached.embed("short")
    assert (cached.cache_misses, cached.cache_hits) == (2, 1)
    cached.embed("third text")  # evicts the least recently used entry
    cached.embed(texts[1])
    assert cached.cache_misses == 4


def test_a_prefetched_text_runs_through_the_model_once_and_gives_the_same_vector() -> None:
    uncached = OnnxMiniLmEmbedder(cache_size=0)
    expected = uncached.embed("the staging host is pg-staging-2")
    uncached.prefetch("the staging host is pg-staging-2")  # no cache, nowhere to keep it
    assert uncached.prefetches == 0

    cached = OnnxMiniLmEmbedder(cache_size=8)
    texts = [f"prefetched text number {i}" for i in range(6)]
    for text in texts:
        cached.prefetch(text)
    cached.prefetch(texts[0])  # running or cached already: not started again
    assert cached.prefetches == 6
    # Asked for while (some of) their runs are still going: each waits for its own run.
    vectors = cached.embed_batch(texts)
    assert cached.cache_misses == 6, "every text ran through the model once"
    assert np.abs(np.array(vectors) - np.array(uncached.embed_batch(texts))).max() < 1e-6
    assert (
        np.abs(np.array(cached.embed("the staging host is pg-staging-2")) - np.array(expected)).max() < 1e-6
    )
    cached.prefetch(texts[1])  # cached: nothing to do
    assert cached.prefetches == 6


def test_a_prefetch_queued_behind_a_busy_pool_is_run_by_its_writer_at_once() -> None:
    """A batch may keep the embedder's threads busy for a while: a single write must not wait
    for it, as it did not before prefetching (it embedded on its own thread)."""
    embedder = OnnxMiniLmEmbedder(cache_size=8)
    release = threading.Event()
    blockers = [embedder._executor().submit(release.wait, 30) for _ in range(2)]  # the pool's threads
    try:
        embedder.prefetch("a capture during an import")  # queued behind them
        started = time.monotonic()
        vector = embedder.embed("a capture during an import")
        assert time.monotonic() - started < 10, "the write waited for the busy pool"
        assert not release.is_set() and not any(b.done() for b in blockers)
    finally:
        release.set()
    assert embedder.cache_misses == 1 and embedder.prefetches == 1
    expected = OnnxMiniLmEmbedder(cache_size=0).embed("a capture during an import")
    assert np.abs(np.array(vector) - np.array(expected)).max() < 1e-6
    assert embedder.embed("a capture during an import") == vector  # cached: no run
    assert embedder.cache_misses == 1


def test_a_corrupted_or_missing_model_file_is_a_config_error(tmp_path: Path) -> None:
    copy = tmp_path / "model.onnx"
    shutil.copyfile(default_model_path(), copy)
    with copy.open("r+b") as stream:
        stream.seek(1000)
        byte = stream.read(1)
        stream.seek(1000)
        stream.write(bytes([byte[0] ^ 0xFF]))
    with pytest.raises(ConfigError, match=r"sha256 .*install\.sh"):
        OnnxMiniLmEmbedder(model_path=copy)
    with pytest.raises(ConfigError, match=r"missing.*install\.sh"):
        OnnxMiniLmEmbedder(model_path=tmp_path / "absent.onnx")


@pytest.mark.integration
def test_the_int8_model_is_built_reproducibly_and_rebuilt_over_a_damaged_file(tmp_path: Path) -> None:
    target = tmp_path / "model.onnx"
    assert build_model(target) == target
    verify_file(target, MODEL_SHA256)  # the pinned bytes: the build is deterministic
    built = target.stat().st_mtime_ns
    build_model(target)
    assert target.stat().st_mtime_ns == built  # already there: not built again
    with target.open("r+b") as stream:
        stream.truncate(1000)
    build_model(target)
    verify_file(target, MODEL_SHA256)
    assert [p.name for p in tmp_path.iterdir()] == ["model.onnx"]  # no build leftovers


@pytest.mark.integration
def test_a_missing_int8_model_is_built_when_the_session_is_made(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "prefix", str(tmp_path))
    assert not default_model_path().exists()
    session = load_session(default_model_path(), 1)
    assert {i.name for i in session.get_inputs()} >= {"input_ids", "attention_mask"}
    verify_file(tmp_path / "share" / "claude-code-memory" / default_model_path().name, MODEL_SHA256)


def test_the_int8_model_agrees_with_the_shipped_one(embedder: OnnxMiniLmEmbedder) -> None:
    # Vectors stored by the shipped model stay comparable with queries from the built one.
    shipped = OnnxMiniLmEmbedder(model_path=source_model_path(), cache_size=0)
    texts = [
        "The user prefers dark mode in the editor",
        "Caroline went to the LGBTQ support group on 7 May 2023.",
        "I switched the CI pipeline to pytest fixtures last week",
        "What breed is it? A greyhound, we adopted him in March.",
        "Remember: deploy with `make release` from the main branch only",
        "Melanie painted a sunrise over the lake and is proud of it",
    ]
    cosines = np.sum(np.array(embedder.embed_batch(texts)) * np.array(shipped.embed_batch(texts)), axis=1)
    assert cosines.min() > 0.98 and cosines.mean() > 0.99, cosines


# -- mem0 on the engine ------------------------------------------------------------------------
def test_search_finds_a_memory_for_its_user_only(engine: Engine) -> None:
    alice = add(engine, "I prefer tabs over spaces in Python code", "alice", app_id="claude-code")
    bob = add(engine, "I prefer tabs over spaces in Python code", "bob")

    assert search_ids(engine, "indentation style in Python", user_id="alice") == [alice]
    assert search_ids(engine, "indentation style in Python", user_id="bob") == [bob]
    assert search_ids(engine, "indentation style in Python", user_id="carol") == []

    memory = engine.memory.get(alice)
    assert memory["memory"] == "I prefer tabs over spaces in Python code"
    assert memory["user_id"] == "alice"
    assert memory["metadata"] == {"app_id": "claude-code"}


def test_a_payload_update_changes_state_without_embedding(engine: Engine) -> None:
    memory_id = add(engine, "Deploy with docker compose up -d", "alice", state="active")
    embedder = engine.embedder
    assert isinstance(embedder, OnnxMiniLmEmbedder)
    runs_before = (embedder.cache_hits, embedder.cache_misses)

    engine.set_payload(memory_id, {"state": "archived"})

    assert (embedder.cache_hits, embedder.cache_misses) == runs_before
    assert engine.memory.get(memory_id)["metadata"] == {"state": "archived"}
    assert engine.memory.get(memory_id)["memory"] == "Deploy with docker compose up -d"
    assert search_ids(engine, "how to deploy", user_id="alice", state="active") == []
    assert search_ids(engine, "how to deploy", user_id="alice", state={"in": ["archived"]}) == [memory_id]
    assert engine.count({"user_id": "alice", "state": "archived"}) == 1


def test_a_text_update_is_embedded_again(engine: Engine) -> None:
    memory_id = add(engine, "My favourite colour is green", "alice")
    add(engine, "The build uses GNU make", "alice")

    engine.memory.update(memory_id, text="I play the cello in an orchestra")

    found = engine.memory.search("musical instrument", filters={"user_id": "alice"}, top_k=1)["results"]
    assert found[0]["id"] == memory_id
    assert found[0]["memory"] == "I play the cello in an orchestra"
    assert [event["event"] for event in engine.memory.history(memory_id)] == ["ADD", "UPDATE"]


def test_delete_removes_the_memory(engine: Engine) -> None:
    memory_id = add(engine, "The staging database is on port 5433", "alice")
    engine.memory.delete(memory_id)
    assert engine.memory.get(memory_id) is None
    assert search_ids(engine, "staging database port", user_id="alice") == []
    assert engine.count() == 0


@pytest.mark.integration
def test_memories_survive_closing_and_reopening(tmp_path: Path) -> None:
    settings = settings_for(tmp_path)
    with Engine.open(settings) as first:
        memory_id = add(first, "The office wifi password rotates every Monday", "alice", state="active")
    with Engine.open(settings) as second:
        assert second.memory.get(memory_id)["memory"] == "The office wifi password rotates every Monday"
        assert search_ids(second, "when does the wifi password change", user_id="alice") == [memory_id]
        assert second.count({"state": "active"}) == 1
    assert (tmp_path / "vectors" / "memories" / "edge_config.json").exists()
    assert (tmp_path / "mem0" / "history.db").exists()


def test_adding_with_inference_fails_without_sending_anything_when_no_llm_is_configured(
    engine: Engine,
) -> None:
    from mem0.exceptions import LLMError

    with pytest.raises(LLMError, match="no LLM is configured"):
        engine.memory.add("remember this", user_id="alice")
    assert isinstance(engine.memory.llm, NoLlm)


# -- the store on its own ----------------------------------------------------------------------
def unit(*values: float) -> list[float]:
    vector = np.zeros(8)
    vector[: len(values)] = values
    return (vector / np.linalg.norm(vector)).tolist()


@pytest.fixture
def store(tmp_path: Path) -> Iterator[QdrantEdgeStore]:
    with QdrantEdgeStore("things", tmp_path, embedding_model_dims=8) as opened:
        yield opened


def test_filters_run_inside_edge(store: QdrantEdgeStore) -> None:
    ids = store.insert(
        [unit(1), unit(1, 0.1), unit(1, 0.2), unit(0, 1)],
        [
            {"user_id": "a", "state": "active", "expires_at": 100, "created_at": "2026-01-01T00:00:00Z"},
            {"user_id": "a", "state": "paused", "expires_at": 200, "created_at": "2026-06-01T00:00:00Z"},
            {"user_id": "b", "state": "active", "expires_at": 300.5},
            {"user_id": "a", "state": "deleted"},
        ],
    )

    def hits(filters: dict[str, Any]) -> set[int]:
        return {ids.index(item.id) for item in store.search("", unit(1), top_k=10, filters=filters)}

    assert all(isinstance(item.id, str) for item in store.search("", unit(1), top_k=10))
    assert hits({"user_id": "a"}) == {0, 1, 3}
    assert hits({"user_id": "a", "state": {"in": ["active", "paused"]}}) == {0, 1}
    assert hits({"state": {"nin": ["active"]}}) == {1, 3}
    assert hits({"state": {"ne": "deleted"}, "user_id": "a"}) == {0, 1}
    assert hits({"expires_at": {"gte": 150, "lt": 300.5}}) == {1}
    assert hits({"expires_at": {"lte": 300.5}, "user_id": "*"}) == {0, 1, 2}
    assert hits({"created_at": {"gt": "2026-03-01T00:00:00Z"}}) == {1}
    assert hits({"OR": [{"user_id": "b"}, {"state": "deleted"}]}) == {2, 3}
    assert hits({"user_id": "a", "NOT": [{"state": "active"}]}) == {1, 3}
    both = {
        "AND": [
            {"OR": [{"user_id": "b"}, {"state": "deleted"}]},
            {"OR": [{"state": "paused"}, {"user_id": "b"}]},
        ]
    }
    assert hits(both) == {2}
    assert hits({"OR": [{"user_id": "b"}, {"state": "*"}]}) == {0, 1, 2, 3}
    # nearest: the same ranking and scores as search, without payloads
    searched = [
        (item.id, item.score) for item in store.search("", unit(1, 0.1), top_k=3, filters={"user_id": "a"})
    ]
    assert same_hits(store.nearest(unit(1, 0.1), 3, {"user_id": "a"}), searched)
    assert [ids.index(i) for i, _ in searched] == [1, 0, 3]
    assert store.count({"user_id": "a"}) == 3
    assert [len(store.list(top_k=None)[0]), len(store.list(top_k=2)[0])] == [4, 2]
    with pytest.raises(BadInput):
        store.search("", unit(1), filters={"flag": True})
    with pytest.raises(BadInput):
        store.search("", unit(1), filters={"state": {"like": "act%"}})
    # Ours: a value among these or none (a scope), and ids left out.
    assert hits({"expires_at": {"in_or_empty": [100]}}) == {0, 3}
    assert hits({"state": {"in_or_empty": ["paused", "deleted"]}}) == {1, 3}
    assert hits({"$not_ids": [ids[0], ids[2]], "user_id": "a"}) == {1, 3}
    assert hits({"$not_ids": []}) == {0, 1, 2, 3}
    for bad in ({"$not_ids": ["not-an-id"]}, {"$not_ids": "x"}, {"state": {"in_or_empty": []}}):
        with pytest.raises(BadInput):
            store.search("", unit(1), filters=bad)


@pytest.mark.integration
def test_a_shard_gets_the_default_indexes_and_loses_retired_ones(tmp_path: Path) -> None:
    # A shard as an earlier version left it: indexed on "hash" (mem0's content digest).
    older = {**DEFAULT_PAYLOAD_INDEXES, **{field: "keyword" for field in RETIRED_PAYLOAD_INDEXES}}
    with QdrantEdgeStore("things", tmp_path, embedding_model_dims=8, payload_indexes=older) as store:
        (point,) = store.insert([unit(1)], [{"user_id": "a", "hash": "h1"}])
        assert set(store.col_info()["payload_schema"]) == set(older)
    with QdrantEdgeStore("things", tmp_path, embedding_model_dims=8) as store:
        assert set(store.col_info()["payload_schema"]) == set(DEFAULT_PAYLOAD_INDEXES)
        # A filter on the retired field still works (Edge reads the payloads), nothing is lost.
        assert [hit.id for hit in store.search("", unit(1), top_k=5, filters={"hash": "h1"})] == [point]
        assert store.get(point).payload == {"user_id": "a", "hash": "h1"}


def _placed_on_disk(path: Path) -> dict[str, bool]:
    shard = EdgeShard.load(str(path), QdrantEdgeStore.shard_config(8))
    try:
        return {field: index_on_disk(info) for field, info in shard.info().payload_schema.items()}
    finally:
        shard.close()


@pytest.mark.integration
def test_the_creation_time_index_lives_on_disk_and_an_older_one_moves_there(tmp_path: Path) -> None:
    with QdrantEdgeStore("things", tmp_path, embedding_model_dims=8) as store:
        old, new = store.insert(
            [unit(1), unit(1, 0.1)], [{"user_id": "a", "created_ts": t} for t in (100.0, 200.0)]
        )
    wanted = {field: field == "created_ts" for field in DEFAULT_PAYLOAD_INDEXES}
    assert _placed_on_disk(tmp_path / "things") == wanted
    # As an earlier version left it: the creation time's index in memory.
    shard = EdgeShard.load(str(tmp_path / "things"), QdrantEdgeStore.shard_config(8))
    shard.update(UpdateOperation.delete_field_index("created_ts"))
    shard.update(UpdateOperation.create_field_index("created_ts", PayloadSchemaType.Float))
    shard.close()
    assert _placed_on_disk(tmp_path / "things")["created_ts"] is False
    with QdrantEdgeStore("things", tmp_path, embedding_model_dims=8, exact_scan=False) as store:
        window = {"user_id": "a", "created_ts": {"gte": 150}}
        assert [hit.id for hit in store.search("", unit(1), top_k=5, filters=window)] == [new]
        assert store.count() == 2 and store.get(old).payload["created_ts"] == 100.0
    assert _placed_on_disk(tmp_path / "things") == wanted  # moved, the others left in memory


def test_the_shard_is_loaded_again_after_many_upserts_with_nothing_lost(store: QdrantEdgeStore) -> None:
    store.reload_min, store.reload_share = 10, 0.5
    ids = store.insert([unit(1, i / 10) for i in range(9)], [{"user_id": "a"}] * 9)
    assert store.reloads == 0
    before = store.nearest(unit(1, 0.35), 5, {"user_id": "a"})
    ids += store.insert([unit(0, 1)], [{"user_id": "b"}])  # the 10th upsert reaches the line
    assert store.reloads == 1
    assert same_hits(store.nearest(unit(1, 0.35), 5, {"user_id": "a"}), before)
    assert store.count() == 10 and store.get(ids[-1]).payload == {"user_id": "b"}
    # Now the line is half of the 10 points loaded, but never below 10 upserts.
    store.update(ids[0], vector=unit(1, 0.9), payload={"user_id": "a", "moved": True})
    store.insert([unit(1, i) for i in range(8)], [{"user_id": "c"}] * 8)
    assert store.reloads == 1
    store.update(ids[1], vector=unit(0, 1))
    assert store.reloads == 2 and store.count() == 18
    assert store.get(ids[0]).payload == {"user_id": "a", "moved": True}
    store.update(ids[2], payload={"state": "paused"})  # payload-only updates do not count
    assert store._upserted == 0


def test_store_updates_and_errors(store: QdrantEdgeStore, tmp_path: Path) -> None:
    (point,) = store.insert([unit(1)], [{"user_id": "a"}])
    store.update(point, payload={"state": "archived"})
    assert store.get(point).payload == {"user_id": "a", "state": "archived"}
    store.update(point, vector=unit(0, 1))
    assert store.search("", unit(0, 1), top_k=1)[0].score == pytest.approx(1.0)
    store.update(point, vector=unit(1), payload={"user_id": "a"})
    assert store.get(point).payload == {"user_id": "a"}

    (first, second) = store.search_batch(["", ""], [unit(1), unit(0, 1)], top_k=1)
    assert first[0].id == second[0].id == point
    assert store.get("not-a-uuid") is None and store.get(str(uuid.uuid4())) is None
    with pytest.raises(NotFound):
        store.set_payload(str(uuid.uuid4()), {"state": "x"})
    with pytest.raises(BadInput):
        store.insert([[1.0, 2.0]])
    with pytest.raises(Unavailable, match="in use"):
        QdrantEdgeStore("things", tmp_path, embedding_model_dims=8)
    store.close()
    with pytest.raises(ConfigError, match="embedder.dims"):
        QdrantEdgeStore("things", tmp_path, embedding_model_dims=16)
    with pytest.raises(Unavailable, match="closed"):
        store.count()


# -- configuration -----------------------------------------------------------------------------
def test_a_qdrant_server_uses_mem0s_stock_provider(tmp_path: Path) -> None:
    from mem0.vector_stores.configs import VectorStoreConfig

    settings = settings_for(
        tmp_path,
        storage={"qdrant_url": "http://qdrant:6333", "qdrant_api_key": "secret", "collection_name": "mem"},
        embedder={"provider": "openai", "model": "text-embedding-3-small", "dims": 1536, "api_key": "k"},
        llm={"provider": "anthropic", "model": "claude-haiku-4-5", "api_key": "a"},
    )
    config = mem0_config(settings)
    assert config["vector_store"] == {
        "provider": "qdrant",
        "config": {
            "collection_name": "mem",
            "embedding_model_dims": 1536,
            "url": "http://qdrant:6333",
            "api_key": "secret",
        },
    }
    assert config["embedder"] == {
        "provider": "openai",
        "config": {"model": "text-embedding-3-small", "embedding_dims": 1536, "api_key": "k"},
    }
    assert config["llm"]["provider"] == "anthropic"
    assert config["llm"]["config"]["model"] == "claude-haiku-4-5"
    assert VectorStoreConfig(**config["vector_store"]).config.url == "http://qdrant:6333"


def test_an_unreachable_qdrant_server_is_unavailable(tmp_path: Path) -> None:
    settings = settings_for(tmp_path, storage={"qdrant_url": "http://127.0.0.1:9"})
    with pytest.raises(Unavailable, match="127.0.0.1:9"):
        Engine.open(settings)


def test_the_embedded_defaults(tmp_path: Path) -> None:
    config = mem0_config(settings_for(tmp_path, performance={"cache_embeddings": False}))
    assert config["vector_store"]["config"]["path"] == str(tmp_path / "vectors")
    assert config["embedder"]["config"]["model_kwargs"] == {"cache_size": 0}
    assert config["history_db_path"] == str(tmp_path / "mem0" / "history.db")
    with pytest.raises(ConfigError, match="embedder.dims"):
        mem0_config(settings_for(tmp_path, embedder={"dims": 768}))


_OFFLINE_RUN = """
import json, socket, sys
attempts = []
real_connect = socket.socket.connect
def connect(self, address):
    if self.family != socket.AF_UNIX:
        attempts.append(repr(address))
    return real_connect(self, address)
socket.socket.connect = connect
from claude_code_memory.config import Settings
from claude_code_memory.engine import Engine
settings = Settings.model_validate({"server": {"data_dir": sys.argv[1]}})
with Engine.open(settings) as engine:
    memory_id = engine.memory.add("offline", user_id="u", infer=False)["results"][0]["id"]
    engine.memory.search("offline", filters={"user_id": "u"})
    engine.memory.update(memory_id, text="still offline")
    engine.memory.delete(memory_id)
# Start-up imports only what the embedded defaults use (the restart budget) ...
unused_names = ("openai", "qdrant_client", "posthog", "requests", "mem0.client.main")
unused = [name for name in unused_names if name in sys.modules]
# ... and mem0's qdrant config is still the real one when a server is configured later, as
# are its hosted platform's client and PostHog's SDK when something imports them.
from mem0.vector_stores.configs import VectorStoreConfig
server = VectorStoreConfig(provider="qdrant", config={"url": "http://127.0.0.1:9"})
real = "client" in type(server.config).model_fields and "qdrant_client" in sys.modules
from mem0.client.main import MemoryClient
import posthog
real = real and hasattr(MemoryClient, "search") and hasattr(posthog, "capture")
print(json.dumps({"attempts": attempts, "unused": unused, "real_qdrant_config": real}))
"""


@pytest.mark.integration
def test_nothing_leaves_the_data_directory_or_the_machine_nor_is_imported_unused(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    environment = {**os.environ, "HOME": str(home), "PYTHONPATH": str(REPO)}
    environment.pop("MEM0_DIR", None)
    done = subprocess.run(
        [sys.executable, "-c", _OFFLINE_RUN, str(tmp_path / "data")],
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.splitlines()[-1])
    assert report == {"attempts": [], "unused": [], "real_qdrant_config": True}, report
    assert list(home.iterdir()) == []
    assert (tmp_path / "data" / "mem0" / "config.json").exists()


def test_the_store_keeps_no_text_and_mem0_reads_it_from_history(engine: Engine, tmp_path: Path) -> None:
    """A point's payload never holds the memory's text (Edge keeps deleted payloads in its
    files); mem0's reads get it back from its history, and a deleted memory's from nowhere."""
    marker = f"zebra{uuid.uuid4().hex[:12]}"
    kept = add(engine, f"The kept note {marker}kept", "alice")
    gone = add(engine, f"The deleted note {marker}gone", "alice")
    store: Any = engine.store
    assert store.text_source is not None
    points, _ = store.require_shard().scroll(ScrollRequest(limit=10, with_payload=True, with_vector=False))
    assert points and not any(field in (p.payload or {}) for p in points for field in TEXT_FIELDS)
    assert engine.memory.get(kept)["memory"] == f"The kept note {marker}kept"
    found = engine.memory.search("the kept note", filters={"user_id": "alice"}, top_k=2)["results"]
    assert {hit["memory"] for hit in found} == {
        f"The kept note {marker}kept",
        f"The deleted note {marker}gone",
    }

    engine.memory.delete(gone)
    engine.memory.db.connection.execute("DELETE FROM history WHERE memory_id = ?", (gone,))
    engine.flush()
    shard_files = [path for path in store.shard_path.rglob("*") if path.is_file()]
    assert shard_files
    assert not any(marker.encode() in path.read_bytes() for path in shard_files)


def test_a_shard_an_older_version_wrote_with_text_is_rewritten_without_it(tmp_path: Path) -> None:
    """Shards written before the store dropped text hold it in their pages and log: the first
    open copies the live points into a new shard without it, and deleted points stay behind."""
    marker = f"okapi{uuid.uuid4().hex[:12]}"
    with QdrantEdgeStore("things", tmp_path, embedding_model_dims=8) as store:
        kept, gone = str(uuid.uuid4()), str(uuid.uuid4())
        store.require_shard().update(  # as an older version wrote them: text in the payload
            UpdateOperation.upsert_points(
                [
                    Point(
                        kept, unit(1), {"user_id": "a", "data": f"kept {marker}", "text_lemmatized": marker}
                    ),
                    Point(gone, unit(0, 1), {"user_id": "a", "data": f"gone {marker}"}),
                ]
            )
        )
        store.delete(gone)
    shard_files = lambda: [p for p in (tmp_path / "things").rglob("*") if p.is_file()]  # noqa: E731
    assert any(marker.encode() in path.read_bytes() for path in shard_files())

    with QdrantEdgeStore("things", tmp_path, embedding_model_dims=8) as store:
        assert store.count() == 1 and store.get(kept).payload == {"user_id": "a"}
        assert store.nearest(unit(1), 1, {"user_id": "a"})[0][0] == kept
    assert not any(marker.encode() in path.read_bytes() for path in shard_files())
    assert [p.name for p in tmp_path.iterdir()] == ["things"]  # no copy or old shard left beside it
