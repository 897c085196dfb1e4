"""An outside audit's secrets as categories: sentences a user would type, one slot each.

For each seed a category picks one of its sentences and fills it with a fresh fake from
``generate.py``, so a rule has to catch the category, not one string. ``bench/faults/redaction.py``
counts what survives redaction; ``tests/test_redact.py`` asserts nothing does.
"""

from __future__ import annotations

import random

from tests.corpora.generate import GENERATORS

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
            "set it to {v} — that's the secret key for s3",
            "{v} is my aws secret key",
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
        (
            "パスワードは{v}です",
            "私のパスワードは「{v}」です",
            "パスワード：{v}",
            "サーバーのパスワードは {v} です",
        ),
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
