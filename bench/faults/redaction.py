"""Fault check: secrets through redaction, by corpus file and by the audit's formats. Prints JSON.

    .venv/bin/python -m bench.faults.redaction [--seeds 100]

Renders every file of ``tests/corpora/secrets`` with ``--seeds`` sets of fake values (made at
run time by ``tests/corpora/generate.py``) and counts the renderings in which a secret, or an
8-character piece of its random part, survives ``redact()``; the clean corpus must come through
without a single finding, and the PII corpus untouched unless PII masking is on. ``audit``
repeats the six formats the fault audit found stored, one sentence each, ``--seeds`` times.
``variants`` are the categories of an outside audit: for each seed a category picks
one of its sentences and fills it with a fresh fake, so a rule has to catch the category, not
one string.
"""

from __future__ import annotations

import argparse
import json
import random
from collections.abc import Callable

from claude_code_memory.policy.redact import redact
from tests.corpora.generate import GENERATORS, load
from tests.corpora.secret_variants import VARIANTS, variant

FRAGMENT = 8

#: The formats the audit found on disk, as a user would type them.
AUDIT: dict[str, Callable[[random.Random], tuple[str, str]]] = {
    "sendgrid_key": lambda rng: (v := GENERATORS["sendgrid_api_key"](rng).value, f"mail through {v} for now"),
    "huggingface_token": lambda rng: (v := GENERATORS["huggingface_token"](rng).value, f"HF login: {v}"),
    "hex_key_named_in_prose": lambda rng: (
        v := GENERATORS["hex32_secret"](rng).value,
        f"the datadog api key is {v}",
    ),
    "docker_login_password": lambda rng: (
        v := GENERATORS["password"](rng).value,
        f"docker login -u deploy -p {v} registry.example.com",
    ),
    "password_in_prose": lambda rng: (v := GENERATORS["password"](rng).value, f"btw the password is {v}"),
    "passphrase_in_prose": lambda rng: (
        v := GENERATORS["passphrase"](rng).value,
        f"the vault unseal phrase for prod is {v}",
    ),
}


def leaked(secret: str, text: str) -> bool:
    if secret in text:
        return True
    return any(secret[i : i + FRAGMENT] in text for i in range(len(secret) - FRAGMENT + 1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=100)
    args = parser.parse_args()

    by_file: dict[str, dict[str, int]] = {}
    for seed in range(args.seeds):
        for sample in load("secrets", seed):
            text = redact(sample.text).text
            row = by_file.setdefault(sample.name, {"renderings": 0, "leaked": 0})
            row["renderings"] += 1
            row["leaked"] += any(leaked(fake.core, text) or fake.value in text for fake in sample.fakes)
    audit = {}
    for name, make in AUDIT.items():
        misses = 0
        for seed in range(args.seeds):
            secret, sentence = make(random.Random(f"{name}:{seed}"))
            misses += leaked(secret, redact(sentence).text)
        audit[name] = {"sentences": args.seeds, "stored_secret": misses}
    variants, examples = {}, []
    for name in VARIANTS:
        misses = 0
        for seed in range(args.seeds):
            secret, sentence = variant(name, random.Random(f"{name}:{seed}"))
            missed = leaked(secret, redact(sentence).text) or leaked(secret.upper(), redact(sentence).text)
            misses += missed
            if missed and len(examples) < 20:
                examples.append(sentence)
        variants[name] = {"sentences": args.seeds, "stored_secret": misses}
    clean = [(s.name, f.kind) for s in load("clean") for f in redact(s.text).findings]
    pii_touched = sum(redact(s.text).text != s.text for s in load("pii"))
    report = {
        "secret_corpus": {
            "files": len(by_file),
            "renderings": sum(r["renderings"] for r in by_file.values()),
            "renderings_with_a_secret_left": sum(r["leaked"] for r in by_file.values()),
            "files_with_a_leak": sorted(name for name, r in by_file.items() if r["leaked"]),
        },
        "audit_formats": audit,
        "variants": {
            "categories": len(variants),
            "categories_with_a_leak": sorted(name for name, row in variants.items() if row["stored_secret"]),
            "sentences": sum(row["sentences"] for row in variants.values()),
            "stored_secret": sum(row["stored_secret"] for row in variants.values()),
            "by_category": variants,
            "examples": examples,
        },
        "clean_corpus": {"files": len(load("clean")), "false_positives": len(clean), "examples": clean[:10]},
        "pii_corpus": {"files": len(load("pii")), "changed_without_pii_masking": pii_touched},
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
