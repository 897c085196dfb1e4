"""Entity rules (no LLM) on a labelled set: precision and recall, overall and by kind.

    .venv/bin/python -m bench.quality.entities [--data bench/data/entities_labelled.json]

The set (written for this benchmark: 40 short developer notes, some with no entity at all)
lists, for each text, the (kind, name) pairs a person would mark. A found entity counts as
right when its kind and name (case-insensitive) are in the text's list. Prints JSON, with the
misses and the false finds so the rules can be improved where they fail. Pure: no server.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

from bench.harness.paths import ROOT
from claude_code_memory.memories.organise.entity_rules import KINDS, extract


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", type=Path, default=ROOT / "bench" / "data" / "entities_labelled.json")
    args = parser.parse_args()
    cases = json.loads(args.data.read_text())
    right, found, expected = Counter[str](), Counter[str](), Counter[str]()
    wrong: list[list[str]] = []
    missed: list[list[str]] = []
    for case in cases:
        truth = {(kind, name.casefold()) for kind, name in case["entities"]}
        got = {(e.kind, e.name.casefold()) for e in extract(case["text"])}
        for kind, name in got:
            found[kind] += 1
            if (kind, name) in truth:
                right[kind] += 1
            else:
                wrong.append([kind, name, case["text"]])
        for kind, name in truth - got:
            missed.append([kind, name, case["text"]])
        for kind, _ in truth:
            expected[kind] += 1

    def ratio(a: int, b: int) -> float | None:
        return round(a / b, 3) if b else None

    report = {
        "texts": len(cases),
        "labelled": sum(expected.values()),
        "precision": ratio(sum(right.values()), sum(found.values())),
        "recall": ratio(sum(right.values()), sum(expected.values())),
        "by_kind": {
            kind: {"precision": ratio(right[kind], found[kind]), "recall": ratio(right[kind], expected[kind])}
            for kind in KINDS
        },
        "false_finds": wrong,
        "misses": missed,
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
