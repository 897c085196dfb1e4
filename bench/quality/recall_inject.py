"""What the UserPromptSubmit recall injects, on LoCoMo's and LongMemEval's development splits.
Prints JSON.

    .venv/bin/python bench/quality/recall_inject.py [--set locomo|longmemeval|both]
        [--variant LABEL:KEY=VALUE[,KEY=VALUE...]]... [--half tune|score] [--details FILE] [--out FILE]
        [--store DIR]

Each question is a prompt. Its memories are written as the two retrieval benchmarks write them
(bench/quality/locomo.py: each turn ``Speaker: text`` with its session as ``conversation_id`` and
its time as ``captured_at``; bench/quality/longmemeval.py: each turn with its role in metadata),
through the memory service in process (real SQLite, Qdrant Edge, the ONNX embedder). Then the
question goes through :meth:`Recall.recall_prompt` — what the Claude Code hooks' UserPromptSubmit
runs (memories/recall/context.py), with a fresh session each time, so nothing was given before,
and ``now`` the question's date (LoCoMo: its conversation's last turn) — and the block it
answers is scored:

* ``memories``, ``chars``, ``tokens``: per prompt, the mean (and p50 / p95) of the memories the
  block holds, the block's length in characters (wrapper included: what the hook injects), and
  its tokens, estimated as characters / 4 (the common rule for English; no Claude tokenizer
  runs offline);
* ``empty``: the share of prompts given nothing;
* ``evidence_in``: the share of prompts whose block holds an evidence turn (LoCoMo: a turn the
  question's evidence names; LongMemEval: a ``has_answer`` turn), and ``session_in`` (LongMemEval:
  a turn of an answer session);
* ``evidence_whole``: the same, counting only an evidence turn the block shows whole (not cut
  to fit the budget);
* ``evidence_top5``: the same for the search's first five results before recall's filters: what
  recall could give at best;
* for LongMemEval's abstention questions (``_abs``: the answer is in no memory), ``injected``: the
  share of them given something, and the memories and tokens they were given.

Each ``--variant`` re-runs the prompts with those ``claude_code.*`` or ``search.*`` settings on
the same store (``--variant floor:claude_code.recall_relative_floor=0.5``;
``bench.shared_room=0`` lays the block out with the room not shared: a memory too long for the
room left cut to all of it). ``--half`` keeps one
half of each split (bench_locomo.half, bench_longmemeval.half_of). ``--details`` writes each
prompt's given memories (their score against the first one's, their similarity, whether each
is evidence), for reading where noise comes from. ``--store DIR`` keeps the written store in
``DIR`` for the next run with the same ``--store`` (bench_longmemeval's ``--store``: the same
folder serves both).

The data (LoCoMo, CC BY-NC 4.0; LongMemEval, MIT) is test data and is not part of this
repository; see ../shared/bench/README.md.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import tempfile
from datetime import datetime
from pathlib import Path
from typing import Any

from bench.quality import locomo
from bench.quality import longmemeval as lme
from claude_code_memory.search.request import SearchRequest

#: Characters per token, the usual estimate for English text.
CHARS_PER_TOKEN = 4
#: The search results recall could have given at best (prompt_memories' default).
TOP = 5


class Store(lme.Bench):
    """The service on a temporary data directory; settings switched per variant."""

    def __init__(self, data_dir: Path) -> None:
        super().__init__(data_dir)
        self.claude_defaults = dict(self.settings.claude_code)
        self.evidence: dict[str, dict[str, Any]] = {}

    def write_locomo(
        self, user: str, conversation: dict[str, Any], manifest: dict[str, dict[str, int]]
    ) -> int:
        """The conversation's turns as bench_locomo.ingest writes them (or taken from a kept
        store's ``manifest``); keeps memory id → dialog id. Returns the turns written."""
        items = locomo.turns(conversation)
        if user in manifest:
            self.positions[user] = manifest[user]
            self.evidence[user] = {memory_id: items[at]["dia_id"] for memory_id, at in manifest[user].items()}
            return 0
        by_memory: dict[str, Any] = {}
        positions: dict[str, int] = {}
        for start in range(0, len(items), 200):
            chunk = items[start : start + 200]
            batch = [
                {
                    "text": t["text"],
                    "metadata": {"dia_id": t["dia_id"], "speaker": t["speaker"], "date": t["date"]},
                    "conversation_id": f"{user}-session-{t['session']}",
                    "captured_at": datetime.fromisoformat(t["at"]) if t["at"] else None,
                }
                for t in chunk
            ]
            results = self.service.writes.add_memories(user_id=user, app_name=lme.APP, items=batch)
            for offset, (turn, outcome) in enumerate(zip(chunk, results, strict=True)):
                for result in outcome.get("results", []):
                    if result.get("event") == "ADD":
                        by_memory[str(result["id"])] = turn["dia_id"]
                        positions[str(result["id"])] = start + offset
        self.evidence[user] = by_memory
        self.positions[user] = positions
        return len(items)

    def apply(self, settings: dict[str, str]) -> None:
        for key, value in self.defaults.items():
            setattr(self.settings.search, key, value)
        for key, value in self.claude_defaults.items():
            setattr(self.settings.claude_code, key, value)
        from claude_code_memory.memories.recall import context

        context.render = (
            _render if settings.get("bench.shared_room", "1") not in ("0", "false") else _unshared
        )
        for key, value in settings.items():
            if key == "bench.shared_room":
                continue
            section, _, name = key.partition(".")
            target, defaults = (
                (self.settings.search, self.defaults)
                if section == "search"
                else (self.settings.claude_code, self.claude_defaults)
            )
            setattr(target, name, lme.typed(value, defaults[name]))

    def prompt(
        self, user: str, session: str, question: str, now: datetime
    ) -> tuple[list[Any], list[str], str]:
        """What recall gives for ``question`` (the memories, best first), the first :data:`TOP`
        ids of the search behind it, before recall's filters, and the block."""
        given = self.service.recall.recall_prompt(
            user, session_id=session, project=None, prompt=question, now=now
        )
        hits = self.service.pipeline.search(
            SearchRequest(
                user_id=user, app_name="bench", query=question, limit=TOP, now=now, with_categories=False
            )
        )
        return list(given.memories), [str(hit.memory.id) for hit in hits], given.block


def _render_of() -> Any:
    from claude_code_memory.memories.recall import context

    return context.render


_render = _render_of()


def _unshared(*args: Any, **kwargs: Any) -> Any:
    """The block laid out with the room not shared (``bench.shared_room=0``): a memory too long
    for the room left is cut to all of it."""
    return _render(*args, **{**kwargs, "shared": False})


def locomo_user(conversation: dict[str, Any]) -> str:
    """The user whose memories are the conversation's turns."""
    return f"locomo-{conversation['sample_id']}"


def whole(memory: Any, block: str) -> bool:
    """Whether the block shows the memory's whole text (not cut to fit the budget)."""
    from claude_code_memory.memories.recall.context import _line_text

    return _line_text(memory.text) + "\n" in block


def spread(values: list[float]) -> dict[str, float]:
    if not values:
        return {"mean": 0.0, "p50": 0.0, "p95": 0.0}
    ordered = sorted(values)
    return {
        "mean": round(statistics.mean(ordered), 2),
        "p50": round(statistics.median(ordered), 2),
        "p95": round(ordered[max(0, int(len(ordered) * 0.95) - 1)], 2),
    }


def figures(rows: list[dict[str, Any]], halves: bool = False) -> dict[str, Any]:
    """The means over prompts of what was given (see the module's docstring), and by half of
    the split (``halves``: these rows are one half already)."""
    if not rows:
        return {"prompts": 0}
    out: dict[str, Any] = {
        "prompts": len(rows),
        "memories": spread([r["memories"] for r in rows]),
        "chars": spread([r["chars"] for r in rows]),
        "tokens": spread([r["chars"] / CHARS_PER_TOKEN for r in rows]),
        "empty": round(statistics.mean(r["memories"] == 0 for r in rows), 4),
    }
    for key in ("evidence_in", "evidence_whole", "session_in", "evidence_top5"):
        if key in rows[0]:
            out[key] = round(statistics.mean(r[key] for r in rows), 4)
    if "half" in rows[0] and not halves:
        out["by_half"] = {
            which: figures([r for r in rows if r["half"] == which], halves=True)
            for which in locomo.HALVES
            if any(r["half"] == which for r in rows)
        }
    return out


def run_locomo(
    store: Store, data: list[dict[str, Any]], label: str, details: list[Any], held_out: str
) -> dict[str, Any]:
    """The figures over LoCoMo's questions (``held_out``: the sample id of the conversation
    bench_locomo.half holds out)."""
    rows = []
    for number, conversation in enumerate(data):
        user = locomo_user(conversation)
        items = locomo.turns(conversation)
        times = [t["at"] for t in items if t["at"]]
        now = datetime.fromisoformat(max(times))
        for index, qa in enumerate(locomo.questions(conversation, {t["dia_id"] for t in items})):
            given, top, block = store.prompt(user, f"{label}-{number}-{index}", qa["question"], now)
            dialog = store.evidence[user]
            evidence = set(qa["evidence"])
            rows.append(
                {
                    "memories": len(given),
                    "chars": len(block),
                    "evidence_in": any(dialog.get(m.id) in evidence for m in given),
                    "evidence_whole": any(dialog.get(m.id) in evidence and whole(m, block) for m in given),
                    "half": "score" if conversation["sample_id"] == held_out else "tune",
                    "evidence_top5": any(dialog.get(i) in evidence for i in top),
                }
            )
            details.append(
                _detail("locomo", label, qa["question"], given, [dialog.get(m.id) in evidence for m in given])
            )
    return figures(rows)


def run_longmemeval(
    store: Store, data: list[dict[str, Any]], label: str, details: list[Any]
) -> dict[str, Any]:
    rows, abstentions = [], []
    for number, question in enumerate(data):
        user = lme.user_of(question)
        now = lme.moment(question["question_date"])
        given, top, block = store.prompt(user, f"{label}-{number}", question["question"], now)
        turns = store.turns[user]
        if question["question_id"].endswith("_abs"):
            abstentions.append({"memories": len(given), "chars": len(block)})
            details.append(
                _detail("longmemeval_abs", label, question["question"], given, [False] * len(given))
            )
            continue
        answers = lme.answer_sessions(question)
        flags = [bool(turns.get(m.id) and turns[m.id].has_answer) for m in given]
        rows.append(
            {
                "memories": len(given),
                "chars": len(block),
                "evidence_in": any(flags),
                "evidence_whole": any(flag and whole(m, block) for m, flag in zip(given, flags, strict=True)),
                "half": lme.half_of(question["question_id"]),
                "session_in": any(
                    turns.get(m.id) is not None and turns[m.id].session in answers for m in given
                ),
                "evidence_top5": any(turns.get(i) is not None and turns[i].has_answer for i in top),
            }
        )
        details.append(_detail("longmemeval", label, question["question"], given, flags))
    out = figures(rows)
    if abstentions:
        out["abstention"] = {
            "questions": len(abstentions),
            "injected": round(statistics.mean(a["memories"] > 0 for a in abstentions), 4),
            "memories": spread([a["memories"] for a in abstentions]),
            "tokens": spread([a["chars"] / CHARS_PER_TOKEN for a in abstentions]),
        }
    return out


def _detail(split: str, label: str, question: str, given: list[Any], evidence: list[bool]) -> dict[str, Any]:
    return {
        "split": split,
        "variant": label,
        "question": question,
        "given": [
            {
                "relative": round((m.score or 0.0) / (given[0].score or 1.0), 4),
                "similarity": round(m.similarity or 0.0, 4),
                "evidence": flag,
            }
            for m, flag in zip(given, evidence, strict=True)
        ],
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--set", choices=["locomo", "longmemeval", "both"], default="both")
    parser.add_argument("--locomo", type=Path, default=locomo.DEFAULT_DATA)
    parser.add_argument("--longmemeval", type=Path, default=lme.DEFAULT_DATA)
    parser.add_argument("--variant", action="append", default=[], type=locomo.variant)
    parser.add_argument("--half", choices=locomo.HALVES)
    parser.add_argument("--details", type=Path, help="also write each prompt's given memories here")
    parser.add_argument("--out", type=Path, help="also write the report here")
    parser.add_argument(
        "--store", type=Path, help="keep the written store here, and take it from here next time"
    )
    args = parser.parse_args()
    cache = lme.EmbeddingCache(Path(os.environ.get("CCMEM_BENCH_CACHE", lme.DEFAULT_CACHE)))
    runs = [("defaults", {}), *args.variant]
    report: dict[str, Any] = {"commit": lme.commit(), "chars_per_token": CHARS_PER_TOKEN}
    details: list[Any] = []
    work = Path(tempfile.mkdtemp(prefix="ccmem-recall-inject-"))
    if args.store is not None:
        args.store.mkdir(parents=True, exist_ok=True)
    with lme.cached_embeddings(cache):
        store = Store(args.store / "data" if args.store is not None else work / "data")
        try:
            if args.set in ("locomo", "both"):
                every = json.loads(args.locomo.read_text())
                held_out = locomo.half(every, "score")[0]["sample_id"]
                conversations = locomo.half(every, args.half)
                manifest_file = args.store / "manifest.json" if args.store is not None else None
                manifest = (
                    json.loads(manifest_file.read_text()) if manifest_file and manifest_file.exists() else {}
                )
                written = sum(store.write_locomo(locomo_user(c), c, manifest) for c in conversations)
                if manifest_file is not None and written:
                    manifest_file.write_text(json.dumps(manifest | store.positions))
                report["locomo"] = {}
                for label, settings in runs:
                    store.apply(settings)
                    report["locomo"][label] = {
                        **({"settings": settings} if settings else {}),
                        **run_locomo(store, conversations, label, details, held_out),
                    }
            if args.set in ("longmemeval", "both"):
                questions = lme.load(args.longmemeval)
                if args.half:
                    questions = [q for q in questions if lme.half_of(q["question_id"]) == args.half]
                store.fill(questions, args.store)
                report["longmemeval"] = {}
                for label, settings in runs:
                    store.apply(settings)
                    report["longmemeval"][label] = {
                        **({"settings": settings} if settings else {}),
                        **run_longmemeval(store, questions, label, details),
                    }
        finally:
            store.close()
            shutil.rmtree(work, ignore_errors=True)
    text = json.dumps(report, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")
    if args.details:
        args.details.write_text(json.dumps(details) + "\n")


if __name__ == "__main__":
    main()
