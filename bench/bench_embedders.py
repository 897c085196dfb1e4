"""Embedding models compared on LoCoMo's development split, dense retrieval alone. Prints JSON.

    .venv/bin/python bench/bench_embedders.py [--data ../shared/bench/locomo-dev.json]
        [--onnx LABEL=MODEL.onnx[:OUTPUT[:MAX_TOKENS]]]...

Embeds every turn and question (``Speaker: text``, as bench_locomo.py stores them) with the
shipped embedder (all-MiniLM-L6-v2, int8, engine/embedder.py) and with each ``--onnx`` model
(a sentence-transformers ONNX export whose OUTPUT is the per-token hidden state; mean-pooled and
L2-normalised, with the same bert-base-uncased tokenizer, one thread, one text a run), and
scores the exact top 20 of each question within its conversation: recall_any@10 and MRR, with
milliseconds per turn and per question. Dense alone: the server fuses it with keywords,
dates and conversation shares (bench_locomo.py measures that). Not a test.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench_locomo import DEFAULT_DATA, questions, turns  # noqa: E402

from claude_code_memory.engine.embedder import OnnxMiniLmEmbedder  # noqa: E402
from claude_code_memory.engine.onnx_model import default_tokenizer_path  # noqa: E402

Embed = Callable[[str], np.ndarray]


def onnx_embedder(path: str, output: str, max_tokens: int) -> Embed:
    import onnxruntime
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(default_tokenizer_path()))
    tokenizer.enable_truncation(max_length=max_tokens)
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
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

    return embed


def score(data: list[dict], embed: Embed) -> dict[str, float]:
    found = reciprocal = 0.0
    asked = turn_count = 0
    turn_seconds = question_seconds = 0.0
    for conversation in data:
        items = turns(conversation)
        started = time.perf_counter()
        matrix = np.stack([embed(item["text"]) for item in items])
        turn_seconds += time.perf_counter() - started
        turn_count += len(items)
        ids = [item["dia_id"] for item in items]
        for qa in questions(conversation, set(ids)):
            started = time.perf_counter()
            query = embed(qa["question"])
            question_seconds += time.perf_counter() - started
            ranked = [ids[i] for i in np.argsort(-(matrix @ query))[:20]]
            evidence = set(qa["evidence"])
            asked += 1
            found += bool(evidence & set(ranked[:10]))
            first = next((i for i, d in enumerate(ranked) if d in evidence), None)
            reciprocal += 0 if first is None else 1 / (first + 1)
    return {
        "dense_recall_any@10": round(found / asked, 4),
        "dense_mrr@20": round(reciprocal / asked, 4),
        "ms_per_turn": round(1000 * turn_seconds / turn_count, 2),
        "ms_per_question": round(1000 * question_seconds / asked, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument(
        "--onnx", action="append", default=[], metavar="LABEL=MODEL.onnx[:OUTPUT[:MAX_TOKENS]]"
    )
    parser.add_argument("--skip-shipped", action="store_true", help="only the --onnx models")
    args = parser.parse_args()
    data = json.loads(args.data.read_text())
    models: dict[str, Embed] = {}
    if not args.skip_shipped:
        shipped = OnnxMiniLmEmbedder(cache_size=0)
        models["all-MiniLM-L6-v2 int8 (shipped)"] = lambda text: np.array(shipped.embed(text))
    for raw in args.onnx:
        label, _, spec = raw.partition("=")
        path, _, rest = spec.partition(":")
        output, _, tokens = rest.partition(":")
        models[label] = onnx_embedder(path, output or "last_hidden_state", int(tokens or 256))
    print(json.dumps({label: score(data, embed) for label, embed in models.items()}, indent=2))


if __name__ == "__main__":
    main()
