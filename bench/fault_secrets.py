"""Fault check: secrets through redaction, by corpus file and by the audit's formats. Prints JSON.

    .venv/bin/python bench/fault_secrets.py [--seeds 100]

Renders every file of ``tests/corpora/secrets`` with ``--seeds`` sets of fake values (made at
run time by ``tests/corpora/generate.py``) and counts the renderings in which a secret, or an
8-character piece of its random part, survives ``redact()``; the clean corpus must come through
without a single finding, and the PII corpus untouched unless PII masking is on. ``audit``
repeats the six formats the fault audit found stored, one sentence each, ``--seeds`` times.
``variants`` are the categories of the second audit (issue 30): for each seed a category picks
one of its sentences and fills it with a fresh fake, so a rule has to catch the category, not
one string.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from claude_code_memory.policy.redact import redact  # noqa: E402
from tests.corpora.generate import GENERATORS, load  # noqa: E402

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


# Each category: sentences with a slot for the secret, and the generators whose fakes fill it.
VARIANT_PASSWORDS = ("password", "human_password", "letters_password")
VARIANTS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "huggingface_token_lowercase": (
        (
            "my hf token is {v}",
            "use {v} to pull the gated model",
            "pasted {v} into the notebook, works now",
            "hugging face token {v} (read only)",
        ),
        ("huggingface_token_lowercase",),
    ),
    "aws_secret_key_in_prose": (
        (
            "aws secret key {v} for the backup user",
            "the AWS secret access key {v} belongs to the ci user",
            "aws secret {v}",
            "here's the aws secret access key - {v}",
            "my amazon secret key {v}, rotate it next week",
        ),
        ("aws_secret_key",),
    ),
    "all_letters_password": (
        (
            "my password is {v}",
            "the wifi password is {v}.",
            "password: {v}",
            "btw my gmail password is {v}, don't share it",
            "the root password for the nas is now {v}",
            "the password is {v} for the staging box",
        ),
        ("letters_password",),
    ),
    "password_german": (
        (
            "mein Passwort ist {v}",
            "das Kennwort für den Server lautet {v}",
            "Passwort: {v}",
            "das WLAN-Passwort ist {v}, bitte nicht weitergeben",
        ),
        VARIANT_PASSWORDS,
    ),
    "password_french": (
        (
            "mon mot de passe est {v}",
            "le mot de passe du serveur est {v}",
            "mot de passe : {v}",
            "le mdp de la base est {v}, ne le partage pas",
        ),
        VARIANT_PASSWORDS,
    ),
    "password_spanish": (
        (
            "mi contraseña es {v}",
            "la contraseña del servidor es {v}",
            "contraseña: {v}",
            "la clave de acceso es {v}",
        ),
        VARIANT_PASSWORDS,
    ),
    "password_portuguese": (
        ("minha senha é {v}", "a senha do banco é {v}", "senha: {v}", "a palavra-passe é {v}"),
        VARIANT_PASSWORDS,
    ),
    "password_italian": (
        ("la mia password è {v}", "la password del server è {v}", "parola d'ordine: {v}"),
        VARIANT_PASSWORDS,
    ),
    "password_dutch": (
        ("mijn wachtwoord is {v}", "het wachtwoord van de server is {v}", "wachtwoord: {v}"),
        VARIANT_PASSWORDS,
    ),
    "password_japanese": (
        ("パスワードは{v}です", "私のパスワードは「{v}」です", "パスワード：{v}", "サーバーのパスワードは {v} です"),
        VARIANT_PASSWORDS,
    ),
    "password_chinese": (
        ("我的密码是{v}", "服务器密码：{v}", "密码为 {v}", "數據庫的密碼是{v}"),
        VARIANT_PASSWORDS,
    ),
    "password_russian": (
        ("мой пароль {v}", "пароль от сервера: {v}", "пароль — {v}", "пароль от почты это {v}"),
        VARIANT_PASSWORDS,
    ),
    "password_korean": (
        ("제 비밀번호는 {v}입니다", "비밀번호: {v}", "서버 비밀번호는 {v} 입니다", "패스워드는 {v}"),
        VARIANT_PASSWORDS,
    ),
    "dash_joined_passphrase": (
        (
            "the password is {v}",
            "passphrase: {v}",
            "my vault passphrase is {v}",
            "mein Passwort ist {v}",
            "the new wifi password is {v}, written on the fridge",
        ),
        ("dashed_passphrase",),
    ),
    "twilio_api_key": (
        (
            "twilio api key {v}, secret is in the vault",
            "TWILIO key: {v}",
            "send the sms through {v} for now",
            "twilio {upper}",
        ),
        ("twilio_api_key",),
    ),
    "npm_token": (
        (
            "npm token {v}",
            "publish with {v} from the release box",
            "//registry.npmjs.org/:_authToken={v}",
            "my npm automation token is {v}",
        ),
        ("npm_token",),
    ),
    "pypi_token": (
        (
            "twine upload -p {v} dist/*",
            "twine upload -u __token__ -p {v} dist/*",
            "my pypi token is {v}",
            "uploaded with {v} yesterday",
        ),
        ("pypi_token",),
    ),
    "cli_flag_password": (
        (
            "twine upload -u deploy -p {v} dist/*",
            "mysql -uroot -p{v} app",
            "curl -u admin:{v} https://ci.internal/api",
            "vault-cli login --password {v}",
            "ghcli sync --token {v} --org acme",
            "sshpass -p {v} ssh deploy@build",
            "redis-cli -h cache -a {v} ping",
            "mongosh mongodb://db/app -u app -p {v}",
        ),
        ("password", "human_password", "opaque_token"),
    ),
    "discord_webhook": (
        (
            "post alerts to {v}",
            "discord webhook: {v}",
            'curl -H "Content-Type: application/json" -d @msg.json {v}',
        ),
        ("discord_webhook",),
    ),
    "slack_webhook": (
        ("slack hook {v}", "SLACK_WEBHOOK_URL={v}", "the alerts go to {v} now"),
        ("slack_webhook",),
    ),
}


def variant(name: str, rng: random.Random) -> tuple[str, str]:
    """One sentence of category ``name`` and the secret's random part, which must not survive."""
    templates, generators = VARIANTS[name]
    fake = GENERATORS[rng.choice(generators)](rng)
    sentence = rng.choice(templates).format(v=fake.value, upper=fake.value.upper())
    return fake.core, sentence


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
