"""Profile extraction on the labelled statements: precision and recall of the rules. Prints JSON.

    .venv/bin/python -m bench.quality.profile_rules [--llm]

The statements are ``tests/corpora/profile_statements_dev.jsonl`` (the rules were written
against it) and ``..._heldout.jsonl`` (written and committed before the rules, never used to
tune them). Each is labelled with a category (identity, preference, tools, project,
working_style, knowledge) or ``none`` (noise: requests, questions, small talk).

- precision: of the statements the extractor gave a fact for, the share whose category is the
  label (a fact for a noise statement, or in the wrong category, is a false positive);
- recall: of the labelled (non-noise) statements, the share extracted in their category;
- ``fact_precision``/``fact_recall``: the same, counting any category as right (is it a fact?).

``--llm`` also measures the LLM extractor configured in ``profile.llm`` (config.yaml or
``CCMEM_PROFILE__LLM__*``) on the same statements; without one it reports why it did not run.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable

from bench.harness.paths import ROOT
from claude_code_memory.memories.profile.rules import Fact, extract

CORPORA = ROOT / "tests" / "corpora"
SETS = {"dev": "profile_statements_dev.jsonl", "heldout": "profile_statements_heldout.jsonl"}


def load(name: str) -> list[dict[str, str]]:
    lines = (CORPORA / SETS[name]).read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def score(rows: list[dict[str, str]], extractor: Callable[[str, str], Fact | None]) -> dict[str, object]:
    predicted = correct = fact_correct = positives = 0
    errors = []
    for row in rows:
        fact = extractor(row["text"], row["speaker"])
        label = row["label"]
        positives += label != "none"
        if fact is not None:
            predicted += 1
            fact_correct += label != "none"
            correct += fact.category == label
        if (fact.category if fact else "none") != label:
            errors.append({"text": row["text"], "label": label, "got": fact.category if fact else "none"})
    return {
        "statements": len(rows),
        "labelled_facts": positives,
        "extracted": predicted,
        "precision": round(correct / predicted, 3) if predicted else None,
        "recall": round(correct / positives, 3) if positives else None,
        "fact_precision": round(fact_correct / predicted, 3) if predicted else None,
        "fact_recall": round(fact_correct / positives, 3) if positives else None,
        "errors": errors,
    }


def llm_extractor() -> tuple[Callable[[str, str], Fact | None] | None, str]:
    from claude_code_memory.config import load_settings
    from claude_code_memory.memories.profile.llm import LlmExtractor

    settings = load_settings()
    if not settings.profile.llm.base_url or not settings.profile.llm.model:
        return None, "no LLM configured (profile.llm.base_url and profile.llm.model are unset)"
    extractor = LlmExtractor(settings.profile.llm)

    def one(text: str, speaker: str) -> Fact | None:
        prefix = "User: " if speaker == "user" else "Assistant: "
        facts = extractor.facts_of(prefix + text)
        return facts[0] if facts else None

    return one, "configured"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--llm", action="store_true", help="also measure the configured LLM extractor")
    args = parser.parse_args()
    sets = {name: load(name) for name in SETS}
    sets["all"] = sets["dev"] + sets["heldout"]
    report: dict[str, object] = {"rules": {name: score(rows, extract) for name, rows in sets.items()}}
    if args.llm:
        extractor, why = llm_extractor()
        report["llm"] = (
            {name: score(rows, extractor) for name, rows in sets.items()} if extractor else {"not_run": why}
        )
    else:
        report["llm"] = {"not_run": "pass --llm with profile.llm configured"}
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
