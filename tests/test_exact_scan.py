"""The exact scan's copy (engine/exact_scan.py) answers every search as Qdrant Edge does.

A real embedded shard takes random writes through the store (inserts, whole updates, payload
merges, new vectors, deletes, reloads that carry the copy over, a compaction that replaces the
shard) and, after each round, the
same searches go to the store's ``nearest`` (which scans the copy) and straight to Edge's own
``shard.query``: the same ids in the same order and the same scores, for every filter shape the
search pipeline sends (a user, a state, an app, a project or a project's scope, ids left out, a
creation range, together), each
user seeing only their own points. Filters the copy cannot read go to Edge; a payload it cannot
match as Edge would turns the copy off.
"""

from __future__ import annotations

import random
import uuid
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import pytest

from claude_code_memory.engine.edge_store import QdrantEdgeStore
from claude_code_memory.engine.exact_scan import ExactScan

pytestmark = pytest.mark.unit

DIMS = 384
USERS = ["u1", "u2", "u3"]
STATES = ["active", "active", "active", "paused", "deleted"]
APPS = [str(uuid.UUID(int=n)) for n in range(1, 4)]
PROJECTS = [None, "p1", "p2"]


def edge_answer(store: QdrantEdgeStore, vector: list[float], top_k: int, filters: dict[str, Any]) -> list:
    request = store._query(vectors=vector, top_k=top_k, filters=filters, with_payload=False)
    with store._locked() as shard:
        return [(str(hit.id), float(hit.score)) for hit in shard.query(request)]


def same(ours: list[tuple[str, float]], edge: list[tuple[str, float]]) -> bool:
    """Equal ids in order and scores within float32 rounding; two ids may trade places only where
    their scores tie."""
    if len(ours) != len(edge):
        return False
    for (our_id, our_score), (edge_id, edge_score) in zip(ours, edge, strict=True):
        if abs(our_score - edge_score) > 1e-4:
            return False
        if our_id != edge_id and abs(our_score - edge_score) > 1e-5:
            return False
    return {i for i, _ in ours} == {i for i, _ in edge} or abs(ours[-1][1] - edge[-1][1]) < 1e-5


def payload(rng: random.Random) -> dict[str, Any]:
    fields: dict[str, Any] = {"user_id": rng.choice(USERS), "state": rng.choice(STATES), "hash": "x"}
    if rng.random() < 0.8:
        fields["app_id"] = rng.choice(APPS)
    if rng.random() < 0.7:
        fields["project"] = rng.choice(PROJECTS)
    if rng.random() < 0.9:
        fields["created_ts"] = rng.uniform(1.7e9, 1.8e9)
    return fields


def vector(rng: np.random.Generator) -> list[float]:
    return [float(x) for x in rng.standard_normal(DIMS)]


def filters_for(rng: random.Random, ids: list[str]) -> dict[str, Any]:
    filters: dict[str, Any] = {"user_id": rng.choice([*USERS, "*", "nobody"])}
    if rng.random() < 0.8:
        filters["state"] = "active"
    if rng.random() < 0.3:
        filters["app_id"] = rng.choice(APPS)
    draw = rng.random()
    if draw < 0.3:
        filters["project"] = rng.choice(["p1", "p2", "p9"])
    elif draw < 0.6:  # a scope: the project's points and those of no project (missing or null)
        filters["project"] = {"in_or_empty": [rng.choice(["p1", "p2", "p9"])]}
    if rng.random() < 0.4:  # points given to a session already, some of them deleted since
        filters["$not_ids"] = rng.sample(ids, min(len(ids), rng.choice([1, 10, 80])))
    if rng.random() < 0.3:
        low = rng.uniform(1.7e9, 1.8e9)
        filters["created_ts"] = {"gte": low, "lte": low + rng.uniform(0, 5e7)}
    return filters


def check_round(
    store: QdrantEdgeStore, rng: random.Random, vectors: np.random.Generator, owners: dict[str, str]
) -> None:
    store.nearest(vector(vectors), 1, None)  # a search starts the reading of the copy, if due
    store.scan_copy.settle()
    for _ in range(25):
        query, top_k, filters = vector(vectors), rng.choice([1, 5, 20, 60]), filters_for(rng, list(owners))
        ours = store.nearest(query, top_k, filters)
        assert store.scan_copy.scan is not None, "the copy was not used"
        edge = edge_answer(store, query, top_k, filters)
        assert same(ours, edge), (filters, ours[:3], edge[:3])
        if filters["user_id"] in USERS:
            assert all(owners[point_id] == filters["user_id"] for point_id, _ in ours)
        assert not {point_id for point_id, _ in ours} & set(filters.get("$not_ids", ()))


def test_the_copy_answers_as_edge_through_every_kind_of_write(tmp_path: Path) -> None:
    rng, vectors = random.Random(7), np.random.default_rng(7)
    store = QdrantEdgeStore("memories", tmp_path / "vectors", DIMS, index_from=0)
    store.reload_min, store.reload_share = 150, 0.0  # the shard is loaded again now and then
    owners: dict[str, str] = {}
    live: list[str] = []

    def insert(count: int) -> None:
        ids = [str(uuid.uuid4()) for _ in range(count)]
        payloads = [payload(rng) for _ in ids]
        store.insert([vector(vectors) for _ in ids], payloads, ids)
        owners.update({i: p["user_id"] for i, p in zip(ids, payloads, strict=True)})
        live.extend(ids)

    insert(400)
    check_round(store, rng, vectors, owners)
    for _ in range(4):
        insert(60)
        for point_id in rng.sample(live, 30):  # whole points again: a new user, vector, payload
            fields = payload(rng)
            store.update(point_id, vector=vector(vectors), payload=fields)
            owners[point_id] = fields["user_id"]
        for point_id in rng.sample(live, 40):  # merged payloads: a state, a project, none at all
            store.set_payload(point_id, {"state": rng.choice(STATES), "project": rng.choice(PROJECTS)})
        for point_id in rng.sample(live, 20):
            store.update(point_id, vector=vector(vectors))
        for point_id in rng.sample(live, 25):
            store.delete(point_id)
            live.remove(point_id)
        check_round(store, rng, vectors, owners)
    assert store.reloads >= 3  # each reload carried the copy over (checked in every round)
    copy_before = store.scan_copy.scan
    store.compact()  # a new shard object: the copy is read again from it
    check_round(store, rng, vectors, owners)
    assert store.scan_copy.scan is not copy_before
    store.close()


def test_filters_it_cannot_read_go_to_edge_and_an_odd_payload_turns_it_off(tmp_path: Path) -> None:
    rng, vectors = random.Random(3), np.random.default_rng(3)
    store = QdrantEdgeStore("memories", tmp_path / "vectors", DIMS, index_from=0)
    ids = [str(uuid.uuid4()) for _ in range(50)]
    store.insert([vector(vectors) for _ in ids], [payload(rng) for _ in ids], ids)
    query = vector(vectors)
    store.nearest(query, 1, None)
    store.scan_copy.settle()
    odd = {"user_id": {"in": ["u1", "u2"]}, "state": "active"}
    assert same(store.nearest(query, 10, odd), edge_answer(store, query, 10, odd))
    assert store.scan_copy.scan is not None and store.scan_copy.scan.nearest(query, 10, odd) is None
    store.set_payload(ids[0], {"project": ["p1", "p2"]})  # a list: Edge matches any element
    assert store.scan_copy.scan is None
    wanted = {"user_id": "*", "project": "p2"}
    assert same(store.nearest(query, 50, wanted), edge_answer(store, query, 50, wanted))
    store.close()


def test_off_by_configuration_and_above_the_index_size(tmp_path: Path) -> None:
    vectors = np.random.default_rng(5)
    off = QdrantEdgeStore("memories", tmp_path / "off", DIMS, exact_scan=False)
    off.insert([vector(vectors)], [{"user_id": "u1"}])
    assert off.nearest(vector(vectors), 1, {"user_id": "u1"}) and off.scan_copy.scan is None
    off.close()
    small = QdrantEdgeStore("memories", tmp_path / "small", DIMS, index_from=30)
    small.insert([vector(vectors) for _ in range(20)], [{"user_id": "u1"}] * 20)
    assert small.nearest(vector(vectors), 1, {"user_id": "u1"})  # Edge answers; the copy is read
    small.scan_copy.settle()
    assert small.scan_copy.scan is not None and len(small.scan_copy.scan) == 20
    small.insert([vector(vectors) for _ in range(15)], [{"user_id": "u1"}] * 15)
    assert small.scan_copy.scan is None  # past index_from the index builder's shard takes over
    assert len(small.nearest(vector(vectors), 40, {"user_id": "u1"})) == 35
    small.close()


def test_the_scan_alone_keeps_rows_right_when_points_move() -> None:
    scan = ExactScan(4, capacity=2)
    scan.upsert("a", [1, 0, 0, 0], {"user_id": "u1"})
    scan.upsert("b", [0, 1, 0, 0], {"user_id": "u2"})
    scan.upsert("c", [0.9, 0.1, 0, 0], {"user_id": "u1"})  # grows past its capacity
    scan.remove("a")  # "c" moves into a's row
    assert scan.nearest([1, 0, 0, 0], 5, {"user_id": "u1"}) == [("c", pytest.approx(0.9939, abs=1e-4))]
    assert scan.nearest([1, 0, 0, 0], 5, {"user_id": "u3"}) == []
    assert [i for i, _ in scan.nearest([0, 1, 0, 0], 5, None) or []] == ["b", "c"]


def test_prepare_search_reads_the_copy_before_any_search(tmp_path: Path) -> None:
    vectors = np.random.default_rng(11)
    store = QdrantEdgeStore("memories", tmp_path / "shard", DIMS)
    store.insert([vector(vectors) for _ in range(12)], [{"user_id": "u1"}] * 12)
    store.close()
    reopened = QdrantEdgeStore("memories", tmp_path / "shard", DIMS)
    assert reopened.scan_copy.scan is None  # nothing reads it at start-up
    reopened.prepare_search()
    reopened.scan_copy.settle()
    assert reopened.scan_copy.scan is not None and len(reopened.scan_copy.scan) == 12
    query, mine = vector(vectors), {"user_id": "u1"}
    assert same(reopened.nearest(query, 5, mine), edge_answer(reopened, query, 5, mine))
    reopened.close()


def test_the_server_reads_the_copy_after_its_start_up_pass(tmp_path: Path) -> None:
    """After a start the searches' copy is read once the start-up reconciliation is done, so the
    first searches do not wait behind that reading (docs/performance.md)."""
    from tests.support.parts import open_parts

    with open_parts(tmp_path / "data") as parts:
        for text in ("The deploy runs on Fridays", "Tabs, not spaces", "The wiki lives on Confluence"):
            parts.service.writes.add_memory(user_id="ann", app_name="t", text=text)
    with open_parts(tmp_path / "data") as parts:
        store = parts.service.vectors.engine.store
        assert isinstance(store, QdrantEdgeStore) and store.scan_copy.scan is None

        async def start_and_wait() -> None:
            async with parts.reconciler.running():
                for _ in range(600):
                    status = parts.reconciler.status()
                    if status is not None and status["state"] != "running":
                        break
                    await anyio.sleep(0.05)
                await anyio.sleep(0.5)  # the reading starts right after the pass

        anyio.run(start_and_wait)
        store.scan_copy.settle()
        assert parts.reconciler.status()["state"] == "done"
        assert store.scan_copy.scan is not None and len(store.scan_copy.scan) == 3  # no search asked


def test_writes_while_the_copy_is_read_go_on_and_reach_the_copy(tmp_path: Path) -> None:
    """The reading takes the store's lock a page of points at a time: writes (and searches,
    which Edge answers) go on between pages instead of waiting for the whole reading, and
    every write the shard took meanwhile is in the copy once it is read, whether the reading had
    passed that point yet or not."""
    rng, vectors = random.Random(3), np.random.default_rng(3)
    store = QdrantEdgeStore("memories", tmp_path / "vectors", DIMS, index_from=0)
    ids = [str(uuid.uuid4()) for _ in range(3000)]
    payloads = [payload(rng) for _ in ids]
    for start in range(0, len(ids), 500):
        chunk = slice(start, start + 500)
        store.insert([vector(vectors) for _ in ids[chunk]], payloads[chunk], ids[chunk])
    owners = {i: p["user_id"] for i, p in zip(ids, payloads, strict=True)}
    live = list(ids)
    store.close()
    store = QdrantEdgeStore("memories", tmp_path / "vectors", DIMS, index_from=0)
    store.reload_min = 10**9  # no reload in the middle of the reading
    store.prepare_search()
    reader = store.scan_copy._reader
    assert reader is not None
    during = 0
    while reader.is_alive() and during < 200:
        point_id = rng.choice(live)
        match rng.randrange(5):
            case 0:
                new = str(uuid.uuid4())
                fields = payload(rng)
                store.insert([vector(vectors)], [fields], [new])
                owners[new] = fields["user_id"]
                live.append(new)
            case 1:
                fields = payload(rng)
                store.update(point_id, vector=vector(vectors), payload=fields)
                owners[point_id] = fields["user_id"]
            case 2:
                store.set_payload(point_id, {"state": rng.choice(STATES), "project": rng.choice(PROJECTS)})
            case 3:
                store.update(point_id, vector=vector(vectors))
            case _:
                store.delete(point_id)
                live.remove(point_id)
        during += 1
    store.scan_copy.settle()
    assert during >= 5, "no write went through while the copy was read"
    copy = store.scan_copy.scan
    assert copy is not None and len(copy) == len(live)
    check_round(store, rng, vectors, owners)
    store.close()
