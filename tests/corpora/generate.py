"""Fake secrets and personal data in their real formats, made when the tests run.

The corpus files are templates: ``{{aws_access_key}}`` becomes a freshly generated, format-valid
access key id, ``{{aws_access_key#2}}`` a second one (the same name and number give the same
value throughout a file). Nothing that looks like a live credential is committed; a seed makes
each rendering reproducible, and the tests render every template with several seeds.

A secret corpus file starts with front matter naming the kinds redaction must report::

    ---
    kinds: aws_access_key aws_secret_key
    ---
    <text>
"""

from __future__ import annotations

import base64
import json
import random
import re
import string
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

CORPORA = Path(__file__).resolve().parent
SLOT = re.compile(r"\{\{([a-z0-9_]+)(?:#(\d+))?\}\}")

LOWER, UPPER, DIGITS = string.ascii_lowercase, string.ascii_uppercase, string.digits
ALNUM = LOWER + UPPER + DIGITS
BASE64URL = ALNUM + "_-"
HEX = "0123456789abcdef"


@dataclass(frozen=True)
class Fake:
    """A generated value; no 8-character piece of ``core`` (its random part) may survive."""

    value: str
    core: str


@dataclass(frozen=True)
class Sample:
    name: str
    text: str
    kinds: frozenset[str]
    fakes: tuple[Fake, ...]


def _pick(rng: random.Random, alphabet: str, length: int) -> str:
    while True:
        value = "".join(rng.choice(alphabet) for _ in range(length))
        # Real tokens mix cases and digits; ours do too, so a rare digit-free draw cannot decide
        # whether a rule looks right.
        wanted = [chars for chars in (LOWER, UPPER, DIGITS) if set(chars) & set(alphabet)]
        if length < 12 or all(set(value) & set(chars) for chars in wanted):
            return value


def _prefixed(prefix: str, alphabet: str, length: int, suffix: str = "") -> Callable[[random.Random], Fake]:
    def make(rng: random.Random) -> Fake:
        core = _pick(rng, alphabet, length)
        return Fake(prefix + core + suffix, core)

    return make


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _pem(
    label: str, *, line: int = 64, size: int = 1190, escaped: bool = False
) -> Callable[[random.Random], Fake]:
    def make(rng: random.Random) -> Fake:
        body = _b64(rng.randbytes(size))
        lines = [body[i : i + line] for i in range(0, len(body), line)]
        if label == "PGP PRIVATE KEY BLOCK":
            lines = ["", *lines, "=" + _b64(rng.randbytes(3))]
        newline = "\\n" if escaped else "\n"
        core = newline.join(lines)
        begin, end = "-----BEGIN " + label + "-----", "-----END " + label + "-----"
        return Fake(newline.join([begin, core, end]) + (newline if escaped else ""), core.strip())

    return make


def _truncated_pem(rng: random.Random) -> Fake:
    body = _b64(rng.randbytes(400))
    lines = [body[i : i + 64] for i in range(0, len(body), 64)]
    core = "\n".join(lines)
    return Fake("-----BEGIN RSA " + "PRIVATE KEY-----\n" + core, core)


def _base64_pem(rng: random.Random) -> Fake:
    pem = _pem("RSA PRIVATE KEY")(rng).value + "\n"
    value = _b64(pem.encode())
    return Fake(value, value[44:-48])  # the ends encode the BEGIN and END lines


def _jwt(rng: random.Random) -> Fake:
    header = _b64url(
        json.dumps({"alg": rng.choice(["HS256", "RS256"]), "typ": "JWT"}, separators=(",", ":")).encode()
    )
    claims = {
        "sub": str(rng.randrange(10**6, 10**7)),
        "name": rng.choice(["Ada", "Grace", "Linus", "Barbara"]),
        "iat": rng.randrange(1_700_000_000, 1_800_000_000),
        "scope": rng.choice(["read write", "admin", "repo"]),
    }
    payload = _b64url(json.dumps(claims, separators=(",", ":")).encode())
    signature = _b64url(rng.randbytes(32))
    return Fake(f"{header}.{payload}.{signature}", f"{payload}.{signature}")


def _aws_secret(rng: random.Random) -> Fake:
    core = _pick(rng, ALNUM + "/+", 40)
    return Fake(core, core)


def _github_fine_grained(rng: random.Random) -> Fake:
    core = "11" + _pick(rng, UPPER + DIGITS, 20) + "_" + _pick(rng, ALNUM, 59)
    return Fake("github_pat_" + core, core)


def _slack_bot(rng: random.Random) -> Fake:
    core = f"{_pick(rng, DIGITS, 12)}-{_pick(rng, DIGITS, 13)}-{_pick(rng, ALNUM, 24)}"
    return Fake("xoxb-" + core, core)


def _slack_user(rng: random.Random) -> Fake:
    core = f"{_pick(rng, DIGITS, 11)}-{_pick(rng, DIGITS, 12)}-{_pick(rng, DIGITS, 13)}-{_pick(rng, HEX, 32)}"
    return Fake("xoxp-" + core, core)


def _slack_webhook(rng: random.Random) -> Fake:
    core = f"T{_pick(rng, UPPER + DIGITS, 8)}/B{_pick(rng, UPPER + DIGITS, 10)}/{_pick(rng, ALNUM, 24)}"
    return Fake("https://hooks.slack.com/services/" + core, core)


_PASSWORD_SYMBOLS = "!*_-+.^~"
_WORDS = ["Summer", "Winter", "Falcon", "Purple", "Monkey", "Dragon", "Coffee", "Thunder", "Maple"]


def _password(rng: random.Random) -> Fake:
    core = _pick(rng, ALNUM + _PASSWORD_SYMBOLS, 16)
    return Fake(core, core)


def _human_password(rng: random.Random) -> Fake:
    value = f"{rng.choice(_WORDS)}{rng.randrange(1970, 2030)}{rng.choice('!*.')}"
    return Fake(value, value)


def _sendgrid_key(rng: random.Random) -> Fake:
    core = _pick(rng, BASE64URL, 22) + "." + _pick(rng, BASE64URL, 43)
    return Fake("SG." + core, core)


# Words a generated passphrase is made of (Diceware style): no function words, nothing in -ed.
_PASSPHRASE_WORDS = [
    "correct",
    "horse",
    "battery",
    "staple",
    "orbit",
    "lantern",
    "pepper",
    "glacier",
    "velvet",
    "walnut",
    "cactus",
    "harbor",
    "pencil",
    "meadow",
    "rocket",
    "tundra",
    "violin",
    "marble",
    "saddle",
    "copper",
    "thistle",
    "beacon",
    "jigsaw",
    "nutmeg",
    "falcon",
    "quartz",
    "ribbon",
    "dolphin",
    "emblem",
    "gravel",
    "kettle",
    "lobster",
    "mosaic",
    "oyster",
    "parsley",
]


def _passphrase(rng: random.Random) -> Fake:
    value = " ".join(rng.sample(_PASSPHRASE_WORDS, rng.randrange(4, 7)))
    return Fake(value, value)


def _dashed_passphrase(rng: random.Random) -> Fake:
    value = "-".join(rng.sample(_PASSPHRASE_WORDS, rng.randrange(3, 6)))
    return Fake(value, value)


def _letters_password(rng: random.Random) -> Fake:
    """Only lowercase letters, as a password manager's "letters only" option makes them."""
    value = "".join(rng.choice(LOWER) for _ in range(rng.randrange(10, 17)))
    return Fake(value, value)


def _pypi_token(rng: random.Random) -> Fake:
    # A macaroon: "pypi-", then base64 of a header naming the index ("\x01\x08pypi.org"), then more.
    header = _b64url(b"\x02\x01\x08pypi.org")[:15]
    core = _pick(rng, BASE64URL, rng.randrange(150, 190))
    return Fake("pypi-" + header + core, core)


def _discord_webhook(rng: random.Random) -> Fake:
    core = f"{_pick(rng, DIGITS, 19)}/{_pick(rng, BASE64URL, 68)}"
    host = rng.choice(["discord.com", "discordapp.com", "ptb.discord.com", "canary.discord.com"])
    return Fake(f"https://{host}/api/webhooks/" + core, core)


def _teams_webhook(rng: random.Random) -> Fake:
    def guid() -> str:
        return "-".join(_pick(rng, HEX, n) for n in (8, 4, 4, 4, 12))

    core = f"{guid()}@{guid()}/IncomingWebhook/{_pick(rng, HEX, 32)}/{guid()}"
    return Fake("https://acme.webhook.office.com/webhookb2/" + core, core)


def _basic_auth(rng: random.Random) -> Fake:
    value = _b64(f"{rng.choice(['admin', 'deploy', 'ci'])}:{_pick(rng, ALNUM, 18)}".encode())
    return Fake(value, value)


def _gcp_key_id(rng: random.Random) -> Fake:
    core = _pick(rng, HEX, 40)
    return Fake(core, core)


# --- personal data ---------------------------------------------------------------------------

_FIRST = ["maria", "jonas", "aiko", "li", "fatima", "olivier", "priya", "tom", "sven", "nadia"]
_LAST = ["garcia", "schmidt", "tanaka", "chen", "haddad", "dubois", "sharma", "okafor", "berg"]
_MAIL_DOMAINS = ["gmail.com", "outlook.com", "fastmail.fm", "proton.me", "acme-corp.io", "uni-hamburg.de"]


def _email(rng: random.Random) -> Fake:
    value = f"{rng.choice(_FIRST)}.{rng.choice(_LAST)}{rng.randrange(100)}@{rng.choice(_MAIL_DOMAINS)}"
    return Fake(value, value)


def _us_number(rng: random.Random) -> tuple[int, int, int]:
    return rng.randrange(200, 1000), rng.randrange(200, 1000), rng.randrange(10000)


def _phone_us(rng: random.Random) -> Fake:
    area, exchange, line = _us_number(rng)
    value = rng.choice(["({a}) {e}-{n:04d}", "{a}-{e}-{n:04d}", "{a}.{e}.{n:04d}", "+1 {a} {e} {n:04d}"])
    value = value.format(a=area, e=exchange, n=line)
    return Fake(value, value)


def _phone_intl(rng: random.Random) -> Fake:
    def digits(count: int) -> str:
        return "".join(rng.choice(DIGITS) for _ in range(count))

    value = rng.choice(
        [
            f"+44 20 {digits(4)} {digits(4)}",
            f"+49 30 {digits(8)}",
            f"+33 6 {digits(2)} {digits(2)} {digits(2)} {digits(2)}",
            f"+81 3-{digits(4)}-{digits(4)}",
            f"+14155{digits(6)}",
            f"+91 98{digits(3)} {digits(5)}",
        ]
    )
    return Fake(value, value)


def _luhn_complete(partial: str) -> str:
    total = 0
    for index, char in enumerate(reversed(partial)):
        number = int(char)
        if index % 2 == 0:
            number = number * 2 - 9 if number > 4 else number * 2
        total += number
    return partial + str((10 - total % 10) % 10)


def _credit_card(rng: random.Random) -> Fake:
    prefix, length = rng.choice([("4", 16), ("51", 16), ("55", 16), ("2221", 16), ("37", 15), ("6011", 16)])
    number = _luhn_complete(prefix + "".join(rng.choice(DIGITS) for _ in range(length - len(prefix) - 1)))
    separator = rng.choice([" ", "-", ""])
    if length == 15:
        value = separator.join([number[:4], number[4:10], number[10:]])
    else:
        value = separator.join(number[i : i + 4] for i in range(0, 16, 4))
    return Fake(value, value)


def _ipv4(rng: random.Random) -> Fake:
    first = rng.choice([23, 34, 52, 81, 91, 104, 145, 185, 10, 172, 192])
    if first == 172:
        value = f"172.{rng.randrange(16, 32)}.{rng.randrange(256)}.{rng.randrange(1, 255)}"
    elif first == 192:
        value = f"192.168.{rng.randrange(256)}.{rng.randrange(1, 255)}"
    else:
        value = f"{first}.{rng.randrange(256)}.{rng.randrange(256)}.{rng.randrange(1, 255)}"
    return Fake(value, value)


def _ipv6(rng: random.Random) -> Fake:
    groups = [rng.choice(["2a01", "2600", "2001", "2a02"])] + [
        f"{rng.randrange(1, 0x10000):x}" for _ in range(7)
    ]
    value = ":".join(groups) if rng.random() < 0.5 else ":".join(groups[:3]) + "::" + groups[7]
    return Fake(value, value)


GENERATORS: dict[str, Callable[[random.Random], Fake]] = {
    "anthropic_api_key": _prefixed("sk-ant-api03-", BASE64URL, 93, "AA"),
    "anthropic_admin_key": _prefixed("sk-ant-admin01-", BASE64URL, 93, "AA"),
    "openai_api_key": _prefixed("sk-proj-", BASE64URL, 156),
    "openai_legacy_key": lambda rng: Fake(
        f"sk-{(a := _pick(rng, ALNUM, 20))}T3BlbkFJ{(b := _pick(rng, ALNUM, 20))}", a + "T3BlbkFJ" + b
    ),
    "openai_svcacct_key": _prefixed("sk-svcacct-", BASE64URL, 120),
    "aws_access_key": _prefixed("AKIA", UPPER + DIGITS, 16),
    "aws_session_key_id": _prefixed("ASIA", UPPER + DIGITS, 16),
    "aws_secret_key": _aws_secret,
    "aws_session_token": _prefixed("IQoJb3JpZ2luX2VjE", ALNUM + "/+", 320),
    "github_token": _prefixed("ghp_", ALNUM, 36),
    "github_oauth": _prefixed("gho_", ALNUM, 36),
    "github_app_token": _prefixed("ghs_", ALNUM, 36),
    "github_fine_grained": _github_fine_grained,
    "slack_bot_token": _slack_bot,
    "slack_user_token": _slack_user,
    "slack_webhook": _slack_webhook,
    "stripe_live_key": _prefixed("sk_live_", ALNUM, 99),
    "stripe_test_key": _prefixed("sk_test_", ALNUM, 24),
    "stripe_restricted_key": _prefixed("rk_live_", ALNUM, 99),
    "stripe_webhook_secret": _prefixed("whsec_", ALNUM, 32),
    "google_api_key": _prefixed("AIza", BASE64URL, 35),
    "sendgrid_api_key": _sendgrid_key,
    "huggingface_token": _prefixed("hf_", ALNUM, 34),
    # lowercase letters only, or with digits: a prefix and a length decide, not the characters
    "huggingface_token_lowercase": lambda rng: _prefixed("hf_", rng.choice([LOWER, LOWER + DIGITS]), 34)(rng),
    "twilio_api_key": _prefixed("SK", HEX, 32),
    "npm_token": _prefixed("npm_", ALNUM, 36),
    "pypi_token": _pypi_token,
    "discord_webhook": _discord_webhook,
    "teams_webhook": _teams_webhook,
    "gitlab_token": _prefixed("glpat-", BASE64URL, 20),
    "digitalocean_token": _prefixed("dop_v1_", HEX, 64),
    "shopify_token": _prefixed("shpat_", HEX, 32),
    "groq_api_key": _prefixed("gsk_", ALNUM, 52),
    "replicate_token": _prefixed("r8_", ALNUM, 37),
    "databricks_token": _prefixed("dapi", HEX, 32),
    "letters_password": _letters_password,
    "dashed_passphrase": _dashed_passphrase,
    "hex32_secret": _prefixed("", HEX, 32),  # Datadog API keys, and many others: 32 hex digits
    "passphrase": _passphrase,
    "gcp_private_key_id": _gcp_key_id,
    "gcp_private_key_json": _pem("PRIVATE KEY", size=1216, escaped=True),
    "rsa_private_key": _pem("RSA PRIVATE KEY"),
    "pkcs8_private_key": _pem("PRIVATE KEY", size=1216),
    "ec_private_key": _pem("EC PRIVATE KEY", size=121),
    "openssh_private_key": _pem("OPENSSH PRIVATE KEY", line=70, size=399),
    "pgp_private_key": _pem("PGP PRIVATE KEY BLOCK", size=900),
    "truncated_private_key": _truncated_pem,
    "b64_private_key": _base64_pem,
    "jwt": _jwt,
    "opaque_token": _prefixed("", ALNUM, 40),
    "password": _password,
    "human_password": _human_password,
    "url_password": _prefixed("", ALNUM, 20),
    "hex_secret": _prefixed("", HEX, 64),
    "base64_secret": lambda rng: Fake(value := _b64(rng.randbytes(32)), value),
    "django_secret_key": _prefixed("django-insecure-", LOWER + DIGITS + "!^*-_=+", 50),
    "basic_auth": _basic_auth,
    "email": _email,
    "phone_us": _phone_us,
    "phone_intl": _phone_intl,
    "credit_card": _credit_card,
    "ipv4": _ipv4,
    "ipv6": _ipv6,
}


def render(template: str, rng: random.Random) -> tuple[str, tuple[Fake, ...]]:
    """Fill every ``{{name}}`` slot; return the text and the values put in."""
    made: dict[tuple[str, str], Fake] = {}

    def fill(match: re.Match[str]) -> str:
        slot = (match.group(1), match.group(2) or "1")
        if slot not in made:
            made[slot] = GENERATORS[match.group(1)](rng)
        return made[slot].value

    return SLOT.sub(fill, template), tuple(made.values())


def _split_front_matter(raw: str) -> tuple[frozenset[str], str]:
    if not raw.startswith("---\n"):
        return frozenset(), raw
    header, _, body = raw[4:].partition("\n---\n")
    kinds: set[str] = set()
    for line in header.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "kinds":
            kinds.update(value.split())
    return frozenset(kinds), body


def load(corpus: str, seed: int = 0) -> list[Sample]:
    """Every file of ``tests/corpora/<corpus>/``; templates rendered with a per-file random generator."""
    samples = []
    for path in sorted((CORPORA / corpus).iterdir()):
        if not path.is_file():
            continue
        raw = path.read_text()
        kinds, body = _split_front_matter(raw)
        if body is raw:  # no front matter: a plain text (the clean corpus), taken as it is
            text, fakes = raw, ()
        else:
            text, fakes = render(body, random.Random(f"{seed}:{path.name}"))
        samples.append(Sample(f"{corpus}/{path.name}", text, kinds, fakes))
    return samples
