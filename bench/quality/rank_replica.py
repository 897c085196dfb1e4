"""Ranking ideas tried in seconds: the search's ranking replayed in process on LoCoMo. Prints JSON.

    .venv/bin/python -m bench.quality.rank_replica [--data ../shared/bench/locomo-dev.json]
        [--idea NAME]... [--cache FILE]

Replays what ``bench/quality/locomo.py`` measures through the server — every turn one memory, each
conversation's questions asked right after it is stored — without a server: the shipped
embedder's vectors (cached in ``--cache``), an SQLite FTS5 index built as the server's
(``porter unicode61``, BM25 over the conversations stored so far), and the search's own pure
steps (:func:`fuse`, :func:`propagate`, :func:`lift`, :mod:`.priors`) with the settings'
defaults. Explicit dates and order words are read as the server does; relative times and
events, which the server resolves against the store, are left out. On the development split
it lands within 0.01 of ``bench/quality/locomo.py`` (recall_any@10 and MRR).

Each ``--idea`` (all of :data:`IDEAS` without one) is the defaults plus one change; the ideas
are the ranking ideas that ``docs/search.md`` reports as not kept. A result here is a reason
to build a change into the server and measure it there, side by side; not a result on its own.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
from collections import Counter
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from bench.quality.locomo import DEFAULT_DATA, KS, questions, turns
from claude_code_memory.config import SearchSettings
from claude_code_memory.search.conversation import lift, propagate
from claude_code_memory.search.dates import windows
from claude_code_memory.search.keyword import fuse, terms
from claude_code_memory.search.priors import asks, asks_when, length_prior, time_boost
from claude_code_memory.search.relative_dates import order as order_word

#: What each idea changes (keys read by :func:`rank`).
IDEAS: dict[str, dict[str, Any]] = {
    "contextual-prev": {"contextual": "prev", "contextual_weight": 0.5},
    "contextual-both": {"contextual": "both", "contextual_weight": 0.5},
    "contextual-prev-as-ranking": {"contextual": "prev", "contextual_weight": None},
    "deeper-50": {"candidates": 50},
    "deeper-100": {"candidates": 100},
    "deeper-50-k20": {"candidates": 50, "rrf_k": 20},
    "rocchio": {"rocchio": (0.3, 5)},
    "keyword-prf": {"keyword_prf": (5, 3)},
    "idf-coverage": {"coverage": 0.5},
    "when-boost": {"when_boost": 0.3},
}


class Conversation:
    def __init__(self, number: int, raw: dict[str, Any], embed: Callable[[list[str]], np.ndarray]) -> None:
        self.items = turns(raw)
        self.id = str(raw.get("sample_id", number))
        ids = [item["dia_id"] for item in self.items]
        self.questions = questions(raw, set(ids))
        self.vectors = embed([item["text"] for item in self.items])
        self.query_vectors = embed([qa["question"] for qa in self.questions])
        self.moments = [datetime.fromisoformat(item["at"]) if item["at"] else None for item in self.items]
        same = [
            (i - 1 if i > 0 and self.items[i - 1]["session"] == item["session"] else None,
             i + 1 if i + 1 < len(self.items) and self.items[i + 1]["session"] == item["session"] else None)
            for i, item in enumerate(self.items)
        ]  # fmt: skip
        self.before = {i: b for i, (b, _) in enumerate(same) if b is not None}
        self.after = {i: a for i, (_, a) in enumerate(same) if a is not None}
        self.neighbours = {i: [n for n in pair if n is not None] for i, pair in enumerate(same)}
        self.session = {i: str(item["session"]) for i, item in enumerate(self.items)}
        self.embed = embed
        self._contextual: dict[str, np.ndarray] = {}

    def contextual(self, mode: str) -> np.ndarray:
        """Each turn embedded with the turn before it (``prev``) or both neighbours (``both``)."""
        if mode not in self._contextual:
            texts = []
            for i, item in enumerate(self.items):
                parts = [self.items[self.before[i]]["text"]] if i in self.before else []
                parts.append(item["text"])
                if mode == "both" and i in self.after:
                    parts.append(self.items[self.after[i]]["text"])
                texts.append("\n".join(parts))
            self._contextual[mode] = self.embed(texts)
        return self._contextual[mode]


class Replica:
    def __init__(self, data: list[dict[str, Any]], cache: Path) -> None:
        stored: dict[str, list[float]] = json.loads(cache.read_text()) if cache.exists() else {}
        embedder: Any = None

        def embed(texts: list[str]) -> np.ndarray:
            nonlocal embedder
            missing = [t for t in dict.fromkeys(texts) if t not in stored]
            if missing:
                if embedder is None:
                    from claude_code_memory.engine.embedder import OnnxMiniLmEmbedder

                    embedder = OnnxMiniLmEmbedder(cache_size=0)
                for text in missing:
                    stored[text] = [round(x, 6) for x in embedder.embed(text)]
                cache.write_text(json.dumps(stored))
            return np.array([stored[t] for t in texts], dtype=np.float32)

        self.conversations = [Conversation(n, raw, embed) for n, raw in enumerate(data)]
        # The bench asks a conversation's questions right after storing it: BM25 statistics
        # are over that conversation and the ones stored before it.
        self.indexes = []
        self.frequencies: list[Counter[str]] = []
        frequency: Counter[str] = Counter()
        for upto, conversation in enumerate(self.conversations):
            index = sqlite3.connect(":memory:")
            index.execute(
                "CREATE VIRTUAL TABLE f USING fts5(content, c UNINDEXED, i UNINDEXED, "
                "tokenize='porter unicode61')"
            )
            for earlier in range(upto + 1):
                rows = [
                    (item["text"], earlier, i) for i, item in enumerate(self.conversations[earlier].items)
                ]
                index.executemany("INSERT INTO f(content, c, i) VALUES (?, ?, ?)", rows)
            self.indexes.append(index)
            for item in conversation.items:
                frequency.update(set(terms(item["text"])))
            self.frequencies.append(frequency.copy())

    def keyword(self, c: int, words: list[str], limit: int) -> list[int]:
        if not words:
            return []
        match = " OR ".join('"' + w.replace('"', "") + '"' for w in words)
        sql = "SELECT i FROM f WHERE f MATCH ? AND c = ? ORDER BY bm25(f) LIMIT ?"
        return [int(row[0]) for row in self.indexes[c].execute(sql, (match, c, limit))]

    def idf(self, c: int, word: str) -> float:
        stored = sum(len(conv.items) for conv in self.conversations[: c + 1])
        return float(np.log(stored / max(1, self.frequencies[c].get(word, 0))))

    def rank(self, c: int, q: int, idea: dict[str, Any]) -> list[int]:
        settings = SearchSettings()
        conversation = self.conversations[c]
        question = conversation.questions[q]["question"]
        items = conversation.items
        candidates = idea.get("candidates", settings.candidates)
        k = idea.get("rrf_k", settings.rrf_k)
        named = windows(question)
        depth = max(candidates, 200) if named else candidates
        query = conversation.query_vectors[q]
        similarity = conversation.vectors @ query
        if "rocchio" in idea:  # the query moved towards the mean of its nearest turns
            weight, top = idea["rocchio"]
            moved = query + weight * conversation.vectors[np.argsort(-similarity)[:top]].mean(axis=0)
            similarity = conversation.vectors @ (moved / np.linalg.norm(moved))
        rankings_extra = []
        if "contextual" in idea:
            contextual = conversation.contextual(idea["contextual"]) @ query
            if idea["contextual_weight"] is None:
                rankings_extra.append([int(i) for i in np.argsort(-contextual)[:candidates]])
            else:
                similarity = similarity + idea["contextual_weight"] * contextual
        dense = [int(i) for i in np.argsort(-similarity)[:depth]]
        words = terms(question)
        keyword = self.keyword(c, words, depth)
        if "keyword_prf" in idea:  # the rarest words of the best first-round hits added
            documents, added = idea["keyword_prf"]
            first = [i for i, _ in fuse([dense[:candidates], keyword[:candidates]], k)[:documents]]
            found = Counter(w for i in first for w in set(terms(items[i]["text"])) if w not in words)
            rare = sorted(found, key=lambda w: -found[w] * self.idf(c, w))[:added]
            keyword = self.keyword(c, words + rare, depth)
        rankings: list[list[int]] = [dense[:candidates], keyword[:candidates], *rankings_extra]
        if named:
            inside = [
                i for i, _ in fuse([dense, keyword], k)
                if conversation.moments[i] and any(w.contains(conversation.moments[i]) for w in named)
            ]  # fmt: skip
            rankings.append(inside[:candidates])
        order = order_word(question)
        if order is not None:
            best = [i for i, _ in fuse(rankings, k)[:candidates]]
            best.sort(key=lambda i: conversation.moments[i] or datetime.min, reverse=order == "last")
            rankings.append(best)
        fused = fuse([[str(i) for i in ranking] for ranking in rankings], k)
        scored = [int(memory_id) for memory_id, _ in fused]
        answers = {
            str(i): str(conversation.after[i])
            for i in scored
            if i in conversation.after and asks(items[i]["text"])
        }
        adjacency = {str(i): [str(n) for n in conversation.neighbours[i]] for i in scored}
        fused = propagate(
            fused, adjacency, settings.neighbour_share, answers=answers, answer_share=settings.answer_share
        )
        sessions = {str(i): session for i, session in conversation.session.items()}
        fused = lift(fused, sessions, settings.conversation_share)
        texts = {memory_id: items[int(memory_id)]["text"] for memory_id, _ in fused}
        if "coverage" in idea:  # times 1 + weight x the share of the query's IDF weight it holds
            weights = {w: self.idf(c, w) for w in words}
            total = sum(weights.values()) or 1.0

            def covered(memory_id: str) -> float:
                held = set(terms(texts[memory_id]))
                return sum(v for w, v in weights.items() if w in held) / total

            fused = [(m, s * (1 + idea["coverage"] * covered(m))) for m, s in fused]
            fused.sort(key=lambda pair: pair[1], reverse=True)
        boost = idea.get("when_boost", settings.when_boost)
        if boost and asks_when(question):
            fused = time_boost(fused, texts, boost)
        fused = length_prior(fused, {m: len(t) for m, t in texts.items()}, settings.length_prior)
        return [int(memory_id) for memory_id, _ in fused[: max(KS)]]

    def score(self, idea: dict[str, Any]) -> dict[str, Any]:
        hits = dict.fromkeys(KS, 0)
        reciprocal = 0.0
        asked = 0
        by_conversation: dict[str, list[bool]] = {}
        for c, conversation in enumerate(self.conversations):
            ids = [item["dia_id"] for item in conversation.items]
            for q, qa in enumerate(conversation.questions):
                ranked = [ids[i] for i in self.rank(c, q, idea)]
                evidence = set(qa["evidence"])
                asked += 1
                for k in KS:
                    hits[k] += bool(evidence & set(ranked[:k]))
                first = next((n for n, d in enumerate(ranked) if d in evidence), None)
                reciprocal += 0 if first is None else 1 / (first + 1)
                by_conversation.setdefault(conversation.id, []).append(bool(evidence & set(ranked[:10])))
        return {
            **{f"recall_any@{k}": round(hits[k] / asked, 4) for k in KS},
            "mrr": round(reciprocal / asked, 4),
            "recall_any@10_by_conversation": {
                c: round(sum(v) / len(v), 4) for c, v in by_conversation.items()
            },
        }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--idea", action="append", choices=sorted(IDEAS))
    parser.add_argument("--cache", type=Path, default=Path("/tmp/ccmem-replica-embeddings.json"))
    args = parser.parse_args()
    replica = Replica(json.loads(args.data.read_text()), args.cache)
    report = {"defaults": replica.score({})}
    for name in args.idea or IDEAS:
        report[name] = {"changes": IDEAS[name], **replica.score(IDEAS[name])}
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
