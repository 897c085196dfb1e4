"""Names: which names announce a secret (``api_key``, ``DB_PASSWORD``, ``clientSecret``), and
which values read as a name or as code rather than as a secret (``access_token``,
``settings.SECRET_KEY``, ``string``, ``nextPageToken``).
"""

from __future__ import annotations

import re

from .scan import words

# A "key" is a secret when one of these comes before it: api_key, secretKey, LICENSE_KEY.
KEY_QUALIFIERS = tuple(
    sorted(
        words(
            "api secret private access signing encryption master auth app license client account service "
            "subscription admin session webhook deploy consumer partner merchant"
        )
    )
)

_NAME_SECRET_WORDS = words(
    "secret secrets token password passwd pass pwd passphrase credential credentials creds "
    "apikey secretkey accesskey authtoken nextauth"
)
# A name whose only hint is one of these (SORT_KEY, PRIVATE_REGISTRY, OAUTH_AUTH) needs a value
# that looks like a token before we believe it.
_NAME_WEAK_WORDS = words("key keys auth private")
_NAME_DESCRIPTIVE_WORDS = words(
    """
    id ids name names path paths file files dir url uri urls host hostname port user username
    login email type enabled enable disabled disable required ttl timeout expiry expires
    expiration lifetime age length len size bits count mode method header field param endpoint
    region version algorithm alg provider format limit min max prefix suffix issuer audience
    scope scopes location store backend policy rotation interval days hours seconds minutes
    fingerprint hint label ref arn env sock socket helper command cmd
    """
)
_NAME_PUBLIC_WORDS = frozenset(("public", "publishable", "pub"))


def name_words(name: str) -> list[str]:
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name)
    return [word for word in re.split(r"[^A-Za-z0-9]+", spaced.lower()) if word]


def secret_name_strength(name: str) -> str | None:
    """``"password"``, ``"token"`` or ``None`` for a metadata key or variable name."""
    words = name_words(name)
    if not words or _NAME_PUBLIC_WORDS.intersection(words):
        return None
    last = words[-1]
    if last in {"password", "passwd", "passphrase", "pwd", "pass", "secret"} or last.endswith(
        ("password", "secret")
    ):
        return "password"
    if last in {"token", "credential", "credentials", "apikey", "secretkey", "authtoken"}:
        return "token"
    if last.endswith("token") or (last == "key" and len(words) > 1 and words[-2] in KEY_QUALIFIERS):
        return "token"
    return None


def env_name_strength(name: str) -> str | None:
    """``"strong"``, ``"weak"`` or ``None`` for an environment variable's name."""
    words = name.lower().split("_")
    if words[-1] in _NAME_DESCRIPTIVE_WORDS or _NAME_PUBLIC_WORDS.intersection(words):
        return None
    for index, word in enumerate(words):
        if word in _NAME_SECRET_WORDS or word.endswith(("password", "passwd", "secret", "token", "apikey")):
            return "strong"
        if word in ("key", "keys") and index and words[index - 1] in KEY_QUALIFIERS:
            return "strong"
    return "weak" if _NAME_WEAK_WORDS.intersection(words) else None


CURSOR_BEFORE = re.compile(
    r"(?i)(?:page|next|prev|previous|continuation|pagination|cursor|sync|resume)[_.-]?\Z"
)
CODE_WORDS = words(
    "self this cls none null nil undefined true false str string int bool bytes any object "
    "optional required os env process config settings request input getpass"
)
# self.password, settings.SECRET_KEY, process.env.apiToken: segments that read as names.
_NAME_SEGMENT = r"(?:[a-z_$][a-z_$]*\d*|[A-Z][A-Z_]*\d*|[a-z_$]+(?:[A-Z][a-z]+)+|(?:[A-Z][a-z]+)+)"
IDENTIFIER_PATH = re.compile(rf"{_NAME_SEGMENT}(?:\.{_NAME_SEGMENT})+")
MULTIWORD_IDENTIFIER = re.compile(r"[a-z]+(?:_[a-z0-9]+)+|[a-z]+(?:[A-Z][a-z]+)+|[A-Z]+(?:_[A-Z0-9]+)+")
KEYWORD_INSIDE = re.compile(r"(?i)pass|pwd|secret|token|key|cred|auth")
