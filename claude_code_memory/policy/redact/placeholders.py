"""What a value that is not a secret looks like, and whether a value looks random.

Template and environment references (``${DB_PASSWORD}``, ``{{ secrets.TOKEN }}``, ``$TOKEN``,
``<token>``), masks (``****``), documentation values (``your-api-key-here``, ``xxxx``,
``changeme``, ``...EXAMPLE``), paths and URLs, host names, numbers and durations: every detector
asks these before it calls a value a secret. ``looks_random`` tells a token from a word or a
constant's name.
"""

from __future__ import annotations

import re

from .scan import words

_PLACEHOLDER_WORDS = words(
    """
    changeme change_me change-me changeit password passwd pass secret token key apikey api_key
    none null nil undefined true false yes no on off empty redacted masked hidden omitted
    todo tbd fixme example sample dummy fake test testing placeholder required optional
    string str int bool bytes any object value text mysecret mypassword mytoken
    your_password your_token your_secret your_api_key foo bar baz foobar xxx abc
    """
)
_PLACEHOLDER_SHAPES = re.compile(
    r"""(?x)
    %\(?\w*\)?[sd]                      # %s, %(name)s
    | :[A-Za-z_]+ | @[A-Za-z_]+ | \? | \$\d+   # SQL bind parameters
    | \[[^\]]*\]                        # [secret]
    | (.)\1{2,}                         # ***, xxxx, 0000
    | ENC\[.* | !vault.* | \$ANSIBLE_VAULT.* | vault:.* | arn:aws:.* | secretref:.*   # encrypted, referenced
    """
)
_PLACEHOLDER_INFIXES = (
    "xxxxx", "...", "…", "example", "placeholder", "redacted", "changeme", "change_me", "change-me",
    "dummy", "replaceme", "replace_me", "replace-me",
)  # fmt: skip
# your-api-key-here, YOUR_TOKEN, test-only-secret, my_password: a word, not random characters, follows
_PLACEHOLDER_PREFIX = re.compile(r"(?i:your|fake|test|sample|my)[_-](?:[a-z]{2,}|[A-Z]{2,})(?:[_-]|$)")


# $TOKEN…, tuple[str, …, os.getenv(…: a variable or an expression, not a literal
_VARIABLE_OR_CALL = re.compile(r"\$[A-Za-z_]|[A-Za-z_][\w.]*[\[(]")


def is_placeholder(value: str) -> bool:
    value = value.strip()
    lowered = value.lower()
    return (
        not value
        or lowered in _PLACEHOLDER_WORDS
        or any(infix in lowered for infix in _PLACEHOLDER_INFIXES)
        or _PLACEHOLDER_PREFIX.match(value) is not None
        or value.count("*") >= max(3, len(value) // 2)  # a mask: ****************QX7L
        or lowered.endswith(("_here", "-here"))
        or value.startswith(("<", "{", "$(", "${"))
        or _VARIABLE_OR_CALL.match(value) is not None
        or value.endswith(">")
        or "[REDACTED:" in value
        or _PLACEHOLDER_SHAPES.fullmatch(value) is not None
    )


def character_classes(value: str) -> int:
    return (
        any(c.islower() for c in value)
        + any(c.isupper() for c in value)
        + any(c.isdigit() for c in value)
        + any(not c.isalnum() for c in value)
    )


def looks_random(value: str) -> bool:
    """A token, not a word or a constant's name: letters and digits, or long and mixed-case.

    Symbols do not count: ``ACCESS_TOKEN`` and ``my-cluster-name`` are names, not tokens.
    """
    if is_placeholder(value) or "\\" in value:
        return False
    has_digit = any(c.isdigit() for c in value)
    has_lower = any(c.islower() for c in value)
    has_upper = any(c.isupper() for c in value)
    if has_digit:
        return has_lower or has_upper
    return has_lower and has_upper and len(value) >= 24 and not re.search(r"[_.\s-]", value)


_URL = re.compile(r"[A-Za-z][\w+.-]{0,30}://")
_PATH = re.compile(r"(?:~|\.{1,2})?(?:/[\w.@%+=:-]*)+|[A-Za-z]:\\\S*|[a-z0-9_.:-]+(?:/[a-z0-9_.:-]+){2,}/?")


def is_path_or_url(value: str) -> bool:
    """``/run/secrets/db``, ``~/.pgpass``, ``kv/data/app``, ``https://…``; not base64 that starts with /."""
    if _URL.match(value):
        return True
    if not _PATH.fullmatch(value):
        return False
    return not any(len(part) >= 12 and character_classes(part) >= 3 for part in value.split("/"))


HOST = re.compile(r"[a-z0-9-]+(?:\.[a-z0-9-]+)+(?::\d{1,5})?(?:/\S*)?")
NUMBER_OR_DURATION = re.compile(r"-?\d+(?:\.\d+)?(?:ms|[smhdw]|kb|mb|gb)?", re.IGNORECASE)
