"""Redaction of secrets (always on) and personal data (opt-in) in free text and metadata.

``redact(text)`` finds credentials in what a memory would store and replaces each with a typed
placeholder, ``[REDACTED:<kind>]``; ``redact(text, pii=True)`` masks emails, phone numbers, card
numbers and IP addresses as well. ``redact_value`` does the same for every string inside a
metadata structure. The module is pure standard library because the capture proxy, which runs
mitmproxy in its own virtualenv, imports it too.

Why no detection library: Yelp's detect-secrets (the best-kept Python option; last release
1.5.0, May 2024) scans line by line and reports matched strings without offsets, cannot span a
multi-line private-key block, has no rules for Anthropic, Google or current OpenAI project keys,
and would pull ``requests`` and PyYAML into the proxy's virtualenv too; its entropy and keyword
plugins are the heuristics that flag hashes and ids. So the rules here are our own regular
expressions, written from the providers' documented token formats.

Rules of the game:

* Every pattern is linear: bounded repetitions, no nested quantifiers over the same characters,
  so 100 KB of hostile text costs milliseconds.
* Overlapping findings merge into one span labelled with the kind of the longest of them (ties go
  to the more specific kind), so no part of a secret is left behind.
* Placeholders never match, so redacting redacted text changes nothing.
* Values that are obviously not secrets are left alone: template and environment references
  (``${DB_PASSWORD}``, ``{{ secrets.TOKEN }}``, ``$TOKEN``, ``<token>``), masks (``****``),
  documentation values (``your-api-key-here``, ``xxxx``, ``changeme``, ``...EXAMPLE``) and, in
  code, variables and calls (``password=password``, ``token = get_token()``).
"""

from __future__ import annotations

import base64
import bisect
import ipaddress
import re
import string
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from claude_code_memory.policy import redact_languages as languages
from claude_code_memory.policy.redact_formats import VENDOR_TOKENS, WEBHOOK_URLS

__all__ = [
    "KINDS",
    "PII_KINDS",
    "PLACEHOLDER",
    "SECRET_KINDS",
    "Finding",
    "Redaction",
    "redact",
    "redact_value",
]


@dataclass(frozen=True)
class Finding:
    """One redacted span: ``text[start:end]`` of the original text was a ``kind``."""

    kind: str
    start: int
    end: int


@dataclass(frozen=True)
class Redaction:
    """The redacted text and what was taken out (offsets refer to the original text)."""

    text: str
    findings: tuple[Finding, ...]


# Most specific first: on a tie in length the earlier kind names the merged span.
SECRET_KINDS: tuple[str, ...] = (
    "anthropic_api_key",
    "openai_api_key",
    "aws_access_key",
    "aws_secret_key",
    "github_token",
    "slack_webhook",
    "discord_webhook",
    "teams_webhook",
    "slack_token",
    "stripe_key",
    "google_api_key",
    "sendgrid_api_key",
    *dict.fromkeys(kind for kind, _ in VENDOR_TOKENS),  # huggingface_token, npm_token, pypi_token …
    "gcp_service_account",
    "private_key",
    "jwt",
    "basic_auth",
    "url_credentials",
    "bearer_token",
    "env_secret",
    "password_assignment",
    "prose_secret",
)
PII_KINDS: tuple[str, ...] = ("credit_card", "email", "phone", "ip_address")
KINDS: frozenset[str] = frozenset(SECRET_KINDS + PII_KINDS)
_RANK = {kind: rank for rank, kind in enumerate(SECRET_KINDS + PII_KINDS)}

PLACEHOLDER = re.compile(r"\[REDACTED:[a-z0-9_]{1,40}\]")  # what replaces a finding; never matched again

Span = tuple[str, int, int]
Detector = Callable[[str], Iterator[Span]]


# --- what is not a secret ------------------------------------------------------------------------


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


_PLACEHOLDER_WORDS = _words(
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


def _is_placeholder(value: str) -> bool:
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


def _character_classes(value: str) -> int:
    return (
        any(c.islower() for c in value)
        + any(c.isupper() for c in value)
        + any(c.isdigit() for c in value)
        + any(not c.isalnum() for c in value)
    )


def _looks_random(value: str) -> bool:
    """A token, not a word or a constant's name: letters and digits, or long and mixed-case.

    Symbols do not count: ``ACCESS_TOKEN`` and ``my-cluster-name`` are names, not tokens.
    """
    if _is_placeholder(value) or "\\" in value:
        return False
    has_digit = any(c.isdigit() for c in value)
    has_lower = any(c.islower() for c in value)
    has_upper = any(c.isupper() for c in value)
    if has_digit:
        return has_lower or has_upper
    return has_lower and has_upper and len(value) >= 24 and not re.search(r"[_.\s-]", value)


_URL = re.compile(r"[A-Za-z][\w+.-]{0,30}://")
_PATH = re.compile(r"(?:~|\.{1,2})?(?:/[\w.@%+=:-]*)+|[A-Za-z]:\\\S*|[a-z0-9_.:-]+(?:/[a-z0-9_.:-]+){2,}/?")


def _is_path_or_url(value: str) -> bool:
    """``/run/secrets/db``, ``~/.pgpass``, ``kv/data/app``, ``https://…``; not base64 that starts with /."""
    if _URL.match(value):
        return True
    if not _PATH.fullmatch(value):
        return False
    return not any(len(part) >= 12 and _character_classes(part) >= 3 for part in value.split("/"))


_HOST = re.compile(r"[a-z0-9-]+(?:\.[a-z0-9-]+)+(?::\d{1,5})?(?:/\S*)?")
_NUMBER_OR_DURATION = re.compile(r"-?\d+(?:\.\d+)?(?:ms|[smhdw]|kb|mb|gb)?", re.IGNORECASE)


# --- names that announce a secret ----------------------------------------------------------------

# A "key" is a secret when one of these comes before it: api_key, secretKey, LICENSE_KEY.
_KEY_QUALIFIERS = tuple(
    sorted(
        _words(
            "api secret private access signing encryption master auth app license client account service "
            "subscription admin session webhook deploy consumer partner merchant"
        )
    )
)

_NAME_SECRET_WORDS = _words(
    "secret secrets token password passwd pass pwd passphrase credential credentials creds "
    "apikey secretkey accesskey authtoken nextauth"
)
# A name whose only hint is one of these (SORT_KEY, PRIVATE_REGISTRY, OAUTH_AUTH) needs a value
# that looks like a token before we believe it.
_NAME_WEAK_WORDS = _words("key keys auth private")
_NAME_DESCRIPTIVE_WORDS = _words(
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


def _name_words(name: str) -> list[str]:
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name)
    return [word for word in re.split(r"[^A-Za-z0-9]+", spaced.lower()) if word]


def _secret_name_strength(name: str) -> str | None:
    """``"password"``, ``"token"`` or ``None`` for a metadata key or variable name."""
    words = _name_words(name)
    if not words or _NAME_PUBLIC_WORDS.intersection(words):
        return None
    last = words[-1]
    if last in {"password", "passwd", "passphrase", "pwd", "pass", "secret"} or last.endswith(
        ("password", "secret")
    ):
        return "password"
    if last in {"token", "credential", "credentials", "apikey", "secretkey", "authtoken"}:
        return "token"
    if last.endswith("token") or (last == "key" and len(words) > 1 and words[-2] in _KEY_QUALIFIERS):
        return "token"
    return None


# --- rules that are one regular expression -------------------------------------------------------
#
# Every pattern starts with a literal or a character class, never with a lookbehind or an
# inline flag, so the regex engine can skip ahead in C to where a match may begin; a token
# boundary before the match is checked in Python instead (``not_after``).

_WORD = frozenset(string.ascii_letters + string.digits + "_")
_WORD_DASH = _WORD | {"-"}
_BASE64_CHARS = frozenset(string.ascii_letters + string.digits + "+/=")


def _not_placeholder(value: str) -> bool:
    return not _is_placeholder(value)


@dataclass(frozen=True)
class _Rule:
    kind: str
    pattern: re.Pattern[str]  # the secret is group "s" if there is one, else the whole match
    accept: Callable[[str], bool] = _not_placeholder
    not_after: frozenset[str] = frozenset()  # a character here before the match: not a token start
    lead: str = ""  # one of these characters must come just before the match, and belongs to it

    def __call__(self, text: str) -> Iterator[Span]:
        has_group = "s" in self.pattern.groupindex
        for match in self.pattern.finditer(text):
            start, end = match.span("s") if has_group else match.span()
            first = match.start()
            if self.lead:
                if not first or text[first - 1] not in self.lead:
                    continue
                first = start = first - 1
            if first and text[first - 1] in self.not_after:
                continue
            if self.accept(text[start:end]):
                yield self.kind, start, end


_AWS_KEY_ID = _Rule(
    "aws_access_key",
    re.compile(r"(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z0-9]{16}(?![A-Z0-9])"),
    not_after=frozenset(string.ascii_uppercase + string.digits),
)

_RULES: tuple[_Rule, ...] = (
    _Rule(
        "anthropic_api_key",
        re.compile(r"sk-ant-[a-z]{2,12}\d{2}-[A-Za-z0-9_-]{20,400}(?![\w-])"),
        not_after=_WORD_DASH,
    ),
    _Rule(
        "openai_api_key",
        re.compile(
            r"sk-(?!ant-)(?:(?:proj|svcacct|admin|None)-[A-Za-z0-9_-]{20,400}|[A-Za-z0-9]{32,200})(?![\w-])"
        ),
        _looks_random,
        _WORD_DASH,
    ),
    _AWS_KEY_ID,
    _Rule(
        "github_token",
        re.compile(r"(?:gh[pousr]_[A-Za-z0-9]{36,251}|github_pat_[A-Za-z0-9_]{22,255})(?![\w-])"),
        not_after=_WORD_DASH,
    ),
    _Rule(
        "slack_webhook",
        re.compile(r"hooks\.slack\.com/(?:services|workflows|triggers)/(?P<s>[A-Za-z0-9_/-]{16,200})"),
        _looks_random,
    ),
    _Rule(
        "slack_token",
        re.compile(r"x(?:ox[abposr]|oxe\.xox[bp]|oxe|app)-[A-Za-z0-9-]{10,250}(?![\w-])"),
        _looks_random,
        _WORD_DASH,
    ),
    _Rule(
        "stripe_key",  # sk_live_, rk_live_, pk_test_ …, scanned from the "k_" (a literal scans faster)
        re.compile(r"k_(?:live|test)_[A-Za-z0-9]{10,247}(?![\w-])"),
        lambda value: _looks_random(value[8:]),
        _WORD_DASH,
        lead="srp",
    ),
    _Rule("stripe_key", re.compile(r"whsec_[A-Za-z0-9]{24,128}(?![\w-])"), _looks_random, _WORD_DASH),
    _Rule("google_api_key", re.compile(r"AIza[0-9A-Za-z_-]{35}(?![\w-])"), not_after=_WORD_DASH),
    _Rule(
        "sendgrid_api_key",
        re.compile(r"SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}(?![\w-])"),
        not_after=_WORD_DASH,
    ),
    *(
        _Rule(kind, re.compile(pattern + r"(?![\w-])"), not_after=_WORD_DASH)
        for kind, pattern in VENDOR_TOKENS
    ),
    *(_Rule(kind, re.compile(pattern)) for kind, pattern in WEBHOOK_URLS),
    _Rule(
        "gcp_service_account",
        re.compile(r"\"private_key_id\\?\"[ \t]*:[ \t]*\\?\"(?P<s>[0-9a-f]{40})\\?\""),
    ),
    _Rule(
        "gcp_service_account",
        re.compile(
            r"\"private_key\\?\"[ \t]*:[ \t]*\\?\"(?P<s>-----BEGIN PRIVATE[ ]KEY-----[^\"]{0,12000}?"
            r"-----END PRIVATE[ ]KEY-----(?:\\\\?n)?)"
        ),
    ),
    _Rule(
        "jwt",
        re.compile(r"eyJ[A-Za-z0-9_-]{8,4096}\.[A-Za-z0-9_-]{8,8192}\.[A-Za-z0-9_-]{8,4096}(?![\w-])"),
        not_after=_WORD_DASH,
    ),
    _Rule(
        "basic_auth",
        re.compile(
            r"[Aa](?i:uthorization)[\"']?[ \t]*[:=][ \t]*[\"']?(?i:basic)[ \t]+"
            r"(?P<s>[A-Za-z0-9+/]{8,2048}={0,2})"
        ),
        not_after=_WORD,
    ),
    _Rule(
        "bearer_token",
        re.compile(r"[Bb](?i:earer)(?:[ \t]*[:=][ \t]*|[ \t]+)(?P<s>[A-Za-z0-9._~+/-]{16,8192}=*)"),
        _looks_random,
        _WORD,
    ),
    _Rule(
        "bearer_token",
        re.compile(
            r"[Aa](?i:uthorization)[\"']?[ \t]*[:=][ \t]*[\"']?(?i:token)[ \t]+"
            r"(?P<s>[A-Za-z0-9._~+/-]{16,8192}=*)"
        ),
        _looks_random,
        _WORD,
    ),
    _Rule(
        "password_assignment",  # ~/.netrc
        re.compile(r"machine[ \t]+\S{1,200}[ \t]+login[ \t]+\S{1,200}[ \t]+password[ \t]+(?P<s>\S{1,256})"),
        not_after=_WORD,
    ),
)


# --- rules that need a little code ---------------------------------------------------------------

_AWS_SECRET = re.compile(
    r"[Ss](?i:ecret)(?P<access>(?i:[_ ]?access)?)(?i:[_ ]?key)?(?: \[[^\]\n]{0,40}\])?[\"']?[ \t]*[:=][ \t]*"
    r"[\"']?(?P<s>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])"
)
_AWS_BEFORE = re.compile(r"(?i)aws[_ ]?\Z")


def _aws_secret_keys(text: str) -> Iterator[Span]:
    """``aws_secret_access_key = …``, ``"SecretAccessKey": "…"``, ``AWS Secret Access Key [None]: …``."""
    for match in _AWS_SECRET.finditer(text):
        named = match.group("access") or _AWS_BEFORE.search(text, max(0, match.start() - 4), match.start())
        if named and _looks_random(match.group("s")):
            yield "aws_secret_key", match.start("s"), match.end("s")


_BASE64_40 = re.compile(r"[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])")

# "aws secret key wJal… for the backup user", "the AWS secret access key - wJal…": prose with no
# "is" or ":" between the name and the key. The name must say AWS (before the label, or just
# after it: "… — that's the secret key for s3"), or "secret access key", which only AWS calls it;
# the key must come within a few words on the same line, after the name or before it, and mix
# upper case, lower case and digits, as a git hash or a sha1 in hex does not.
_AWS_SECRET_IN_PROSE = re.compile(
    r"[Ss](?i:ecret)(?P<access>[ _-]?(?i:access))?(?:[ _-]?(?i:key))?(?![A-Za-z])"
)
_AWS_NAMED_BEFORE = re.compile(r"(?i)(?:^|[^a-z])(?:aws|amazon|iam)[^a-z\n]")
_AWS_NAMED_AFTER = re.compile(
    r"(?i)[ \t]+(?:(?:for|of|on)[ \t]+)?(?:the[ \t]+)?(?:aws|amazon|iam|s3)(?![a-z0-9])"
)
_AWS_SECRET_REACH = 48


def _aws_secrets_in_prose(text: str) -> Iterator[Span]:
    for label in _AWS_SECRET_IN_PROSE.finditer(text):
        start, end = label.span()
        line_start = text.rfind("\n", max(0, start - 40), start) + 1 or max(0, start - 40)
        if not (
            label.group("access")
            or _AWS_NAMED_BEFORE.search(text, line_start, start)
            or _AWS_NAMED_AFTER.match(text, end)
        ):
            continue
        line_end = text.find("\n", end, end + _AWS_SECRET_REACH)
        after = _aws_prose_key(text, end, line_end if line_end >= 0 else end + _AWS_SECRET_REACH)
        if after is None:  # the key given first: "set it to wJal… — that's the secret key for s3"
            line_before = text.rfind("\n", max(0, start - _AWS_SECRET_REACH), start) + 1
            after = _aws_prose_key(text, max(line_before, start - _AWS_SECRET_REACH - 40), start, last=True)
        if after is not None:
            yield "aws_secret_key", after[0], after[1]


def _aws_prose_key(text: str, begin: int, stop: int, *, last: bool = False) -> tuple[int, int] | None:
    """The first (``last``: the last) whole 40-character key between ``begin`` and ``stop``."""
    found = None
    for candidate in _BASE64_40.finditer(text, begin, stop):
        if candidate.start() and text[candidate.start() - 1] in _BASE64_CHARS:
            continue
        value = candidate.group()
        found = candidate.span() if _character_classes(value) >= 3 and _looks_random(value) else None
        if not last:
            break
    return found


def _aws_secrets_beside_key_ids(text: str) -> Iterator[Span]:
    """A 40-character base64 string on the same line as an access key id (credentials.csv)."""
    for _, key_start, key_end in _AWS_KEY_ID(text):
        line_start = text.rfind("\n", max(0, key_start - 300), key_start) + 1 or max(0, key_start - 300)
        line_end = text.find("\n", key_end, key_end + 300)
        line_end = min(len(text), key_end + 300) if line_end < 0 else line_end
        for candidate in _BASE64_40.finditer(text, line_start, line_end):
            value = candidate.group()
            if candidate.start() and text[candidate.start() - 1] in _BASE64_CHARS:
                continue
            if _character_classes(value) >= 3 and not _is_placeholder(value):
                yield "aws_secret_key", candidate.start(), candidate.end()


@dataclass(frozen=True)
class _CommandOption:
    """An option of a command line, such as ``curl … -u user:password`` or ``mysql … -pSECRET``."""

    kind: str
    command: re.Pattern[str]
    option: re.Pattern[str]  # the secret is group "s"; searched up to the end of the command
    # what must come just before ``command`` ("docker " before "login "): scanning for a literal
    # and looking back is faster than scanning for an alternation of program names
    before: re.Pattern[str] | None = None

    def __call__(self, text: str) -> Iterator[Span]:
        scanned_until = 0
        for command in self.command.finditer(text):
            start = command.start()
            if self.before is not None:
                program = self.before.search(text, max(0, start - 40), start)
                if program is None:
                    continue
                start = program.start()
            if start < scanned_until or (start and text[start - 1] in _WORD_DASH):
                continue
            scanned_until = _command_end(text, command.end())
            for option in self.option.finditer(text, command.end() - 1, scanned_until):
                if not _is_placeholder(option.group("s").rpartition(":")[2]):
                    yield self.kind, option.start("s"), option.end("s")


def _command_end(text: str, position: int, limit: int = 2000) -> int:
    """End of the shell command running on from ``position``, across ``\\`` continuations."""
    stop = min(len(text), position + limit)
    while True:
        newline = text.find("\n", position, stop)
        if newline < 0:
            return stop
        if not text[position:newline].rstrip("\r").endswith("\\"):
            return newline
        position = newline + 1


# An option's value: anything up to a space or a quote, but not the next option (--password-stdin).
_OPTION_VALUE = r"(?P<s>(?!-{1,2}[a-z][a-z-]{0,30}(?:[\s\"']|\Z))[^\s\"'`]{1,256})"

_COMMAND_OPTIONS = (
    _CommandOption(
        "basic_auth",
        re.compile(r"curl[ \t]"),
        re.compile(r"[ \t](?:-u|--user)[ =][\"']?(?P<s>[^\s:\"'`]{1,128}:[^\s\"'`]{1,256})"),
    ),
    _CommandOption(
        "password_assignment",
        re.compile(r"mysql(?:dump|admin)?[ \t]"),
        re.compile(r"[ \t]-p(?P<s>[^\s\"'`]{4,128})"),
    ),
    _CommandOption(  # -p is a password only after "login"; "docker run -p 8080:80" publishes a port
        "password_assignment",
        re.compile(r"login[ \t]"),
        re.compile(r"[ \t](?:-p|--password)(?:[ \t]+|=)?[\"']?" + _OPTION_VALUE),
        re.compile(
            r"(?:docker|podman|nerdctl|buildah|skopeo|oras|crane|helm[ \t]+registry)[ \t]+(?:auth[ \t]+)?\Z"
        ),
    ),
    _CommandOption(  # twine upload -p pypi-…; -p is the password of twine's upload and register
        "password_assignment",
        re.compile(r"twine[ \t]+(?:upload|register)[ \t]"),
        re.compile(r"[ \t](?:-p|--password)(?:[ \t]+|=)[\"']?" + _OPTION_VALUE),
    ),
    _CommandOption(
        "password_assignment",
        re.compile(r"sshpass[ \t]"),
        re.compile(r"[ \t]-p[ \t]*[\"']?" + _OPTION_VALUE),
    ),
    _CommandOption(
        "password_assignment",
        re.compile(r"redis-cli[ \t]"),
        re.compile(r"[ \t](?:-a|--pass)[ \t]+[\"']?" + _OPTION_VALUE),
    ),
    _CommandOption(  # mongo and mongosh; mongodump, mongorestore, mongoexport, mongoimport
        "password_assignment",
        re.compile(r"mongo(?:sh|dump|restore|export|import)?[ \t]"),
        re.compile(r"[ \t](?:-p|--password)(?:[ \t]+|=)[\"']?" + _OPTION_VALUE),
    ),
    _CommandOption(  # zip -P, unzip -P: an archive's password
        "password_assignment",
        re.compile(r"zip[ \t]"),
        re.compile(r"[ \t]-P[ \t]+[\"']?" + _OPTION_VALUE),
        re.compile(r"(?:un)?\Z"),
    ),
    _CommandOption(  # 7z x -p…, 7za, 7zz
        "password_assignment",
        re.compile(r"7z[az]?[ \t]"),
        re.compile(r"[ \t]-p(?=\S)[\"']?" + _OPTION_VALUE),
    ),
    _CommandOption(  # openssl … -passin pass:…, -passout pass:…, -pass pass:…
        "password_assignment",
        re.compile(r"openssl[ \t]"),
        re.compile(r"[ \t]-pass(?:in|out)?[ \t]+[\"']?pass:" + _OPTION_VALUE),
    ),
)

_SCHEME_BEFORE = re.compile(r"[A-Za-z][A-Za-z0-9+.-]{0,30}\Z")
_URL_CREDENTIALS = re.compile(r"://[^\s:/?#@\[\]\"'<>]{0,128}:(?P<s>[^\s/?#\"'<>]{1,256})@(?=[A-Za-z0-9\[])")


def _url_credentials(text: str) -> Iterator[Span]:
    """``scheme://user:password@host`` (postgres, mysql, mongodb+srv, redis, amqp, https …)."""
    for match in _URL_CREDENTIALS.finditer(text):
        password = match.group("s")
        if (
            len(password) >= 3
            and not _is_placeholder(password)
            and _SCHEME_BEFORE.search(text, max(0, match.start() - 31), match.start())
        ):
            yield "url_credentials", match.start("s"), match.end("s")


_PEM_BEGIN = re.compile(r"-----BEGIN (?:[A-Z0-9]+ ){0,4}PRIVATE[ ]KEY(?: BLOCK)?-----")
_PEM_END = re.compile(r"-----END (?:[A-Z0-9]+ ){0,4}PRIVATE[ ]KEY(?: BLOCK)?-----")
# A block cut short (pasted halfway, truncated log): its base64 lines, real or escaped newlines.
_PEM_BODY = re.compile(
    r"(?:(?:\r?\n|\\r?\\n)[ \t]*(?:[A-Za-z0-9+/=]{8,100}|[A-Za-z-]{2,20}: [^\r\n\\]{0,200})?[ \t]*"
    r"(?=\r?\n|\\r?\\n|\Z|[\"']))*"
)
_PEM_MAX_BODY = 65536


def _private_keys(text: str) -> Iterator[Span]:
    begins = list(_PEM_BEGIN.finditer(text))
    if not begins:
        return
    ends = [match.end() for match in _PEM_END.finditer(text)]
    covered = -1
    for begin in begins:
        if begin.start() < covered:
            continue
        index = bisect.bisect_left(ends, begin.end())
        if index < len(ends) and ends[index] - begin.end() <= _PEM_MAX_BODY:
            end = ends[index]
        else:
            end = _PEM_BODY.match(text, begin.end()).end()  # type: ignore[union-attr]  # matches ""
        covered = end
        yield "private_key", begin.start(), end


# "-----BEGIN" base64-encoded, as in kubeconfig's client-key-data and Kubernetes Secret data.
_BASE64_PEM = re.compile(r"LS0tLS1CRUdJTi[A-Za-z0-9+/]{60,16384}={0,2}")


def _base64_private_keys(text: str) -> Iterator[Span]:
    for match in _BASE64_PEM.finditer(text):
        if match.start() and text[match.start() - 1] in _BASE64_CHARS:
            continue
        head = match.group()[:64]
        if b"PRIVATE" in base64.b64decode(head, validate=False):
            yield "private_key", match.start(), match.end()


# password=…, "api_key": "…", DB_PASSWORD: …, --client-secret …, <password>…</password>.
# The scan looks for the word (password, secret, token, key …) and then reads around it.
_SECRET_WORD_SCAN = re.compile(
    r"[PpSsTtKkCc](?i:ass(?:word|wd|phrase)?|wd|ecret(?:_key_base)?|oken|ey|redentials?)(?![A-Za-z0-9_])"
)
_SECRET_WORDS = _words(
    "pass password passwd passphrase pwd secret secret_key_base token key credential credentials"
)
_PASSWORD_WORDS = ("pass", "pwd", "secret")
# Joined onto the word without a separator: apitoken, dbpassword, authtoken, requirepass.
_JOINED_PREFIXES = tuple(
    _words(
        "access refresh auth api bearer session app bot client db admin root master user private signing "
        "encryption license id oauth require"
    )
)
_ASSIGNMENT_TAIL = re.compile(
    r"(?P<close>\\?[\"'`]?\]?)"  # "password": / ['password'] =
    r"(?:(?P<sep>[ \t]{0,4}(?::=|=>|->|=(?!=)|:(?![:/\\]))[ \t]{0,4})|(?P<tag>>)|(?P<flag>[ \t]+)"
    r"|(?P<comma>[ \t]{0,4},[ \t]{0,16}))"  # define('DB_PASSWORD', '…'), headers.set("x-api-key", "…")
    r"(?P<value>\\?\"[^\"\n]{0,512}?\\?\"|\\?'[^'\n]{0,512}?\\?'|`[^`\n]{0,512}`"
    r"|[^\s\"'`,;&<>(){}\[\]\\]{1,512})"
)
_CURSOR_BEFORE = re.compile(
    r"(?i)(?:page|next|prev|previous|continuation|pagination|cursor|sync|resume)[_.-]?\Z"
)
_FLAG_HEAD = re.compile(r"(?:^|\s)-{1,2}[A-Za-z0-9_-]{0,40}\Z")
_CODE_WORDS = _words(
    "self this cls none null nil undefined true false str string int bool bytes any object "
    "optional required os env process config settings request input getpass"
)
# self.password, settings.SECRET_KEY, process.env.apiToken: segments that read as names.
_NAME_SEGMENT = r"(?:[a-z_$][a-z_$]*\d*|[A-Z][A-Z_]*\d*|[a-z_$]+(?:[A-Z][a-z]+)+|(?:[A-Z][a-z]+)+)"
_IDENTIFIER_PATH = re.compile(rf"{_NAME_SEGMENT}(?:\.{_NAME_SEGMENT})+")
_MULTIWORD_IDENTIFIER = re.compile(r"[a-z]+(?:_[a-z0-9]+)+|[a-z]+(?:[A-Z][a-z]+)+|[A-Z]+(?:_[A-Z0-9]+)+")
_IDENTIFIER = re.compile(r"[A-Za-z_]\w*")
_WORD_WITH_NUMBER = re.compile(r"[a-z]+\d*")
_REFERENCE_WORDS = _words(
    "password passwd pass pwd passphrase secret token key apikey credential credentials auth"
)
_KEYWORD_INSIDE = re.compile(r"(?i)pass|pwd|secret|token|key|cred|auth")


def _starts_a_word(text: str, position: int) -> bool:
    """At a word start, after an escaped ``\\n``/``\\t``, or at a camelCase hump."""
    if position == 0 or not text[position - 1].isalpha() or text[position - 2 : position] in ("\\n", "\\t"):
        return True
    return text[position].isupper() and (text[position - 1].islower() or text[position - 1].isdigit())


def _secret_key_start(text: str, start: int, word: str) -> int | None:
    """Where the name ending in ``word`` begins (``api_key``, ``dbpassword``), if it is one."""
    before = text[max(0, start - 13) : start].lower()
    if word == "key":
        qualified = before[:-1] if before.endswith(("_", ".", "-")) else before
        for qualifier in _KEY_QUALIFIERS:
            if qualified.endswith(qualifier):
                qualifier_start = start - (len(before) - len(qualified)) - len(qualifier)
                return qualifier_start if _starts_a_word(text, qualifier_start) else None
        return None
    if before.endswith(_JOINED_PREFIXES):
        for prefix in _JOINED_PREFIXES:
            if before.endswith(prefix) and _starts_a_word(text, start - len(prefix)):
                return start - len(prefix)
    return start if _starts_a_word(text, start) else None


def _reads_as_prose(text: str, key_start: int, tail: re.Match[str]) -> bool:
    """``key: value`` that is not alone on its line, as in YAML, reads as a sentence."""
    line_start = text.rfind("\n", max(0, key_start - 200), key_start) + 1
    if (line_start == 0 and key_start > 200) or text[line_start:key_start].strip(" \t-\"'"):
        return True
    line_end = text.find("\n", tail.end(), tail.end() + 200)
    rest = text[tail.end() : tail.end() + 200 if line_end < 0 else line_end]
    return bool(rest.partition(" #")[0].strip(" \t,;\r"))


def _names_a_variable(value: str) -> bool:
    """``access_token``, ``dbPassword``, ``SECRET_KEY``, ``getpass``: an identifier, not a token."""
    words = _name_words(value)
    if not all(_WORD_WITH_NUMBER.fullmatch(word) for word in words):
        return False  # digits inside a word (b9a, x7k): random characters
    if _MULTIWORD_IDENTIFIER.fullmatch(value) or _REFERENCE_WORDS.intersection(words):
        return True
    return not any(c.isdigit() for c in value) and _KEYWORD_INSIDE.search(value) is not None


def _assignment_value_is_secret(text: str, key_start: int, tail: re.Match[str], strength: str) -> bool:
    raw = tail.group("value")
    quoted = raw[:1] in "\"'`" or raw[:2] in ('\\"', "\\'")
    value = raw.strip("\\\"'`") if quoted else raw
    if _is_placeholder(value) or _is_path_or_url(value):
        return False
    if quoted and re.search(r"\s", value):
        # A passphrase may have spaces; a label ("Enter your password") has no digit.
        return strength == "password" and len(value) >= 8 and any(c.isdigit() for c in value)
    if not quoted:
        following = text[tail.end() : tail.end() + 1]
        if following in ("(", "[", "{") or _IDENTIFIER_PATH.fullmatch(value):
            return False  # a call, an index, an attribute: code, not a literal
        if value.rstrip("!?;").lower() in _CODE_WORDS:
            return False  # a type: "password: string;", "secret: String!"
        if _IDENTIFIER.fullmatch(value) and _names_a_variable(value):
            return False  # password=password, token=access_token, secret=SECRET_KEY, pw=getpass
        if _NUMBER_OR_DURATION.fullmatch(value):
            return False
        if tail.group("sep") and ":" in tail.group("sep") and _reads_as_prose(text, key_start, tail):
            strength = "token"  # "login failed: password: incorrect" is prose, not YAML
    if strength == "token":
        return len(value) >= 8 and not _NUMBER_OR_DURATION.fullmatch(value) and _looks_random(value)
    return len(value) >= 4


def _name_start(text: str, position: int) -> int:
    """Start of the identifier (``DB_PASSWORD``, ``x-api-key``, ``--requirepass``) around ``position``."""
    limit = max(0, position - 64)
    while position > limit and (text[position - 1].isalnum() or text[position - 1] in "_.-"):
        position -= 1
    return position


def _assignments(text: str) -> Iterator[Span]:
    examined_until = 0
    for word_match in _SECRET_WORD_SCAN.finditer(text):
        start, end = word_match.span()
        if start < examined_until:
            continue  # inside a value already looked at, as in password=password=…
        word = word_match.group().lower()
        tail = _ASSIGNMENT_TAIL.match(text, end) if word in _SECRET_WORDS else None
        if tail is None or (tail.group("flag") is not None and "-" not in text[max(0, start - 24) : start]):
            continue
        key_start = _secret_key_start(text, start, word)
        if key_start is None:
            continue
        if tail.group("flag") is not None and (
            tail.group("close") or not _FLAG_HEAD.search(text, max(0, key_start - 48), key_start)
        ):
            continue  # "--password hunter2" is a flag; "password hunter2" is prose
        if tail.group("tag") is not None and not text.endswith("<", 0, key_start):
            continue
        if tail.group("comma") is not None and not (
            text[_name_start(text, key_start) - 1 : key_start].startswith(("'", '"'))
            and tail.group("close").strip("\\]")
            and tail.group("value")[:1] in "\"'\\"
        ):
            continue  # only a quoted name followed by a quoted value: f("password", "…")
        if word == "token" and _CURSOR_BEFORE.search(text, max(0, start - 16), start):
            continue  # nextPageToken, continuation_token: a cursor, not a credential
        examined_until = tail.end()
        key = text[key_start:end].lower()
        strength = "password" if any(part in key for part in _PASSWORD_WORDS) else "token"
        if tail.group("comma") is not None:
            strength = "token"  # a list of names ("password", "token") is no assignment
        if not _assignment_value_is_secret(text, key_start, tail, strength):
            continue
        value_start, value_end = tail.span("value")
        raw = tail.group("value")
        if raw[:1] in "\"'`" or raw[:2] in ('\\"', "\\'"):
            value_start += 2 if raw[0] == "\\" else 1
            value_end -= 2 if raw[-2:-1] == "\\" else 1
        if value_end > value_start:
            yield "password_assignment", value_start, value_end


_ENV_VALUE = r"(?:=|: )(?P<value>\"[^\"\n]{0,1024}\"|'[^'\n]{0,1024}'|[^\s\"'`\\]{1,1024})"
_ENV_LINES = (
    # the lookbehind after the first letter keeps the fast scan for [A-Z] and stops mid-name starts
    re.compile(r"(?P<name>[A-Z](?<![A-Za-z0-9_][A-Z])[A-Z0-9_]{1,80})" + _ENV_VALUE),
    re.compile(r"\\[nt](?P<name>[A-Z][A-Z0-9_]{1,80})" + _ENV_VALUE),  # inside JSON: "…\nDB_PASSWORD=…"
)
_ENV_NOT_AFTER = _WORD | set("$.{-")


def _env_name_strength(name: str) -> str | None:
    """``"strong"``, ``"weak"`` or ``None`` for an environment variable's name."""
    words = name.lower().split("_")
    if words[-1] in _NAME_DESCRIPTIVE_WORDS or _NAME_PUBLIC_WORDS.intersection(words):
        return None
    for index, word in enumerate(words):
        if word in _NAME_SECRET_WORDS or word.endswith(("password", "passwd", "secret", "token", "apikey")):
            return "strong"
        if word in ("key", "keys") and index and words[index - 1] in _KEY_QUALIFIERS:
            return "strong"
    return "weak" if _NAME_WEAK_WORDS.intersection(words) else None


def _env_secrets(text: str) -> Iterator[Span]:
    matches = [match for pattern in _ENV_LINES for match in pattern.finditer(text)]
    for match in matches:
        name_start = match.start("name")
        escaped = text[name_start - 2 : name_start] in ("\\n", "\\t")  # inside a JSON string
        if name_start and text[name_start - 1] in _ENV_NOT_AFTER and not escaped:
            continue
        strength = _env_name_strength(match.group("name"))
        if strength is None:
            continue
        raw = match.group("value")
        quoted = raw[:1] in "\"'"
        value = raw[1:-1] if quoted else raw
        if (
            len(value) < 4
            or _is_placeholder(value)
            or _is_path_or_url(value)
            or _HOST.fullmatch(value)
            or _NUMBER_OR_DURATION.fullmatch(value)
            or _IDENTIFIER_PATH.fullmatch(value)
            or value.lower() in _CODE_WORDS
            or (strength == "weak" and not (len(value) >= 16 and _looks_random(value)))
        ):
            continue
        start, end = match.span("value")
        yield "env_secret", start + quoted, end - quoted


# --- credentials named in prose -----------------------------------------------------------------
#
# "btw the password is hunter2correct", "the datadog api key is 0c46…", "the vault unseal phrase for
# prod is correct horse battery staple": a label, a few words, "is"/"was"/":"/"=", the value. The
# label stays and the value goes. Prose uses the same words about credentials rather than with one
# ("the token is valid for 15 minutes", "the secret is to keep batches small"), so the value must
# look like what its label names: a token looks random; a passphrase may be plain words, the rest
# of its sentence; a password has a digit or a symbol, or is words joined by dashes, or is letters
# alone that look random or end the clause without reading as a description ("the password is
# incorrect."). Other languages say the same things (``policy/redact_languages.py``).


def _label_scan(labels: frozenset[str] | tuple[str, ...], after: str) -> re.Pattern[str]:
    """One scan for many labels: their first letters as one character class, which keeps the
    engine's fast skip, then each rest tied to its letter by a lookbehind."""
    by_letter: dict[str, list[str]] = {}
    for label in sorted(labels, key=len, reverse=True):
        by_letter.setdefault(label[0], []).append(re.escape(label[1:]))
    cases = {letter: "".join(dict.fromkeys(letter + letter.upper())) for letter in by_letter}
    rests = "|".join(
        f"(?<=[{cases[letter]}])(?i:{'|'.join(rest)})" for letter, rest in sorted(by_letter.items())
    )
    return re.compile(f"[{''.join(cases[letter] for letter in sorted(by_letter))}](?:{rests}){after}")


# The scan looks for the noun (password, phrase, key, token …), then reads the qualifier before it.
# A text that holds a label of another language (Passwort, mot de passe …) is scanned for those
# too; the others, most texts, skip the longer scan.
_PROSE_NOUNS = _words("password passwd passcode passphrase pwd pw phrase key token secret words")
_PROSE_NOUN = _label_scan(_PROSE_NOUNS, r"(?![\w-])")
_PROSE_NOUN_ANY_LANGUAGE = _label_scan(_PROSE_NOUNS | languages.PASSWORD_LABELS, r"(?![\w-])")


def _prose_nouns(text: str) -> Iterator[re.Match[str]]:
    lowered = text.lower()
    foreign = any(label in lowered for label in languages.PASSWORD_LABELS)
    return (_PROSE_NOUN_ANY_LANGUAGE if foreign else _PROSE_NOUN).finditer(text)


_PROSE_QUALIFIERS = {
    "phrase": re.compile(r"(?i)(?:pass|unseal|seed|recovery|mnemonic)[ -]?\Z"),
    "words": re.compile(r"(?i)(?:seed|recovery|mnemonic)[ -]\Z"),
    "key": re.compile(r"(?i)(?:api|access|secret|auth|license|client|signing|master|unseal|root)[ _-]?\Z"),
}


_PROSE_NOT_AFTER = _WORD_DASH | set(".$/@{")
_PROSE_WORD = r"[\w'’/-]{1,24}(?:\.[\w'’/-]{1,24}){0,3}"
_PROSE_VERB = "(?i:" + "|".join(sorted(languages.VERBS, key=len, reverse=True)) + ")"
_PROSE_TAIL = re.compile(
    # at most six words between the label and the verb: "for prod", "I set for the admin user"
    rf"(?P<bridge>(?:[ \t]+(?!{_PROSE_VERB}:?[ \t])(?:{_PROSE_WORD})){{0,6}}?)"
    rf"(?:[ \t]+{_PROSE_VERB}:?"
    r"(?:[ \t]+(?i:now|still|just|actually|currently|(?:set|changed|reset)[ \t]+to))?[ \t]+"
    r"|[ \t]*(?::|=|→|->|=>)[ \t]+)"  # "key=value" with no space is code or a query: _assignments
    r"(?P<value>\"[^\"\n]{1,200}\"|'[^'\n]{1,200}'|`[^`\n]{1,200}`|“[^”\n]{1,200}”|«[^»\n]{1,200}»"
    r"|„[^“”\n]{1,200}[“”]|[^\s\"'`“«„]{1,256})"
)
_PROSE_QUOTES = "\"'`“«„"
_PROSE_REACH = 6 * 26 + 12  # six bridge words and the verb
_VERB_LETTERS = "".join(
    sorted({verb[0] for verb in languages.VERBS} | {verb[0].upper() for verb in languages.VERBS})
)
# the verbs' first letters as a lookahead first: most spaces are followed by none of them
_PROSE_CONNECTOR = re.compile(
    rf"[ \t:=→>](?:(?<=[ \t])(?=[{_VERB_LETTERS}]){_PROSE_VERB}:?[ \t]|(?<=[:=→>])[ \t])"
)
# What may come between the label and its verb: a qualifier ("for prod", "of the staging db"),
# a clause ("I set", "you gave me", "that works") or an adverb. "the password manager is …",
# "the token limit is …", "the secret name is …" describe something else.
_PROSE_BRIDGE_OPENERS = languages.BRIDGE_OPENERS | _words(
    "for of to on in at from with we i you they he she that which here now currently still again today"
)
_PROSE_TRAILING = ".,;:!?)]}'\"’”"
_PROSE_STRONG_SYMBOLS = frozenset("!@#$%^&*+=?~")
_DIGIT = re.compile(r"\d")
_LETTER = re.compile(r"[^\W\d_]")
# sha256-hashed, base64-encoded, 256-bit, utf-8, write-only, argon2id, pbkdf2, rs256, x509:
# words about a credential that have a digit or a symbol in them.
_PROSE_NOT_A_PASSWORD = re.compile(
    r"(?i)[a-z0-9]+(?:-[a-z0-9]+)*-(?:[a-z]{2,}(?:ed|ing)|bits?|bytes?|chars?|characters?|digits?|words?"
    r"|long|only|safe|based|compatible|friendly|aware|free|proof|like|style|ish|ready|wise)"
    r"|(?:sha|md|aes|rsa|ecdsa|ed|x|hs|rs|es|ps|p|argon|pbkdf|bcrypt|scrypt|base|utf|fido|oauth|totp|hotp"
    r"|blake|crc|kdf|v)-?\d{1,5}[a-z]{0,2}"
)
_PROSE_PHRASE_END = re.compile(r"[.;,!?:](?=\s|\Z)|[\n\"“”()\[\]{}<>|]| [-–—] ")
_PROSE_PHRASE_WORD = re.compile(r"[A-Za-z0-9'’!@#$%^&*+=~-]{1,32}")
# Words a sentence about a passphrase starts with, and words a generated passphrase hardly has.
_PROSE_FUNCTION_WORDS = _words(
    """
    a an the is are was were be been being not no never also only just still very too so then
    it its this that these those what which who whom how where when why there here
    my your our their his her me you we they us them i something anything nothing everything
    whatever whichever in on at to for from with without by of under over into onto inside behind
    and or but nor if unless than as must should can could will would may might shall do does did
    has have had set kept held written hidden known shown given made taken sent split put left
    built bound found lost long short weak strong secure insecure same different wrong incorrect
    invalid empty blank unknown required optional enter type choose pick use provide create
    generate see ask contact leave press run read check one two three four five six seven eight
    nine ten eleven twelve twenty dozen several many few some any all each every both
    """
)


def _prose_password(value: str) -> bool:
    """Letters with a digit or a symbol, and not a word about passwords (sha256-hashed, 256-bit)."""
    return (
        6 <= len(value) <= 128
        and (_DIGIT.search(value) is not None or not _PROSE_STRONG_SYMBOLS.isdisjoint(value))
        and _LETTER.search(value) is not None
        and not _is_placeholder(value)
        and not _is_path_or_url(value)
        and not _HOST.fullmatch(value)
        and not _NUMBER_OR_DURATION.fullmatch(value)
        and not _PROSE_NOT_A_PASSWORD.fullmatch(value)
    )


_ASCII_LETTERS = re.compile(r"[A-Za-z]{6,64}")
_VOWELS = frozenset("aeiouy")
_LONGEST_CONSONANT_RUN = re.compile(r"[b-df-hj-np-tv-xz]{5,}")
# Endings of adjectives and participles in the languages of redact_languages: "the password is
# hashed / unchangeable / obligatoire / obrigatório / verplicht": a description, not a value.
_DESCRIPTION_ENDING = re.compile(
    r"(?:ed|ing|ly|able|ible|ive|ous|ful|less|ent|ant|ic|al|ary|ory|ique|eux|euse|if|ive|lich|ig|bar|los"
    r"|iert|tet|ado|ada|ido|ida|oria|orio|ante|ente|ato|ata|uto|uta|ale|ile|ijk|baar)\Z"
)


def _unusual_pairs(lowered: str) -> int:
    return sum(
        a not in _VOWELS and b not in _VOWELS and a + b not in languages.CONSONANT_PAIRS
        for a, b in zip(lowered, lowered[1:], strict=False)
    )


def _letters_look_random(lowered: str) -> bool:
    """``kiyqvbjmthpb``: consonant pairs no word uses, five consonants in a row, or hardly a vowel."""
    vowels = sum(c in _VOWELS for c in lowered)
    return (
        _unusual_pairs(lowered) >= 2
        or _LONGEST_CONSONANT_RUN.search(lowered) is not None
        or vowels * 6 < len(lowered)
    )


def _letters_password(value: str, ends_clause: bool) -> bool:
    """A password of letters alone: random-looking anywhere, or a word that ends its clause and
    describes nothing ("my password is sunshine." but not "the password is incorrect.")."""
    if not _ASCII_LETTERS.fullmatch(value) or _is_placeholder(value):
        return False
    lowered = value.lower()
    if lowered in languages.DESCRIPTIONS or lowered in _PROSE_FUNCTION_WORDS:
        return False
    named = (
        value[0].isupper() and value[1].islower()
    )  # PostgreSQL, Kubernetes: a name, unless it ends the clause
    if _letters_look_random(lowered) and not named and not _MULTIWORD_IDENTIFIER.fullmatch(value):
        return True
    return (
        ends_clause
        and not _MULTIWORD_IDENTIFIER.fullmatch(value)  # passwordHash, userSecret
        and not _KEYWORD_INSIDE.search(value)  # dbpassword, usersecret
        # an ending decides only for a word with no unusual pair past a prefix ("un|breakable")
        and (_DESCRIPTION_ENDING.search(lowered) is None or _unusual_pairs(lowered[2:]) > 0)
    )


# Words that open compounds rather than passphrases: "end-to-end", "per-user-scoped", "one-time-use".
_COMPOUND_PARTS = _words(
    "per non pre re co sub self multi cross once read write only use time single double out up down off"
)
_DASHED_WORDS = re.compile(r"[A-Za-z]{3,12}(?:-[A-Za-z]{3,12}){2,9}")


def _dashed_passphrase(value: str) -> bool:
    """``correct-horse-battery-staple``: three words or more joined by dashes, none a little word."""
    if not _DASHED_WORDS.fullmatch(value) or _is_placeholder(value) or _PROSE_NOT_A_PASSWORD.fullmatch(value):
        return False
    parts = value.lower().split("-")
    return not any(part in _PROSE_FUNCTION_WORDS or part in _COMPOUND_PARTS for part in parts)


def _stated_password(value: str, ends_clause: bool) -> bool:
    """What a password label's verb may be followed by, in any language."""
    return _prose_password(value) or _letters_password(value, ends_clause) or _dashed_passphrase(value)


# After a value, what ends its clause: punctuation, the end of the line, or a word that starts
# another ("… is kiyqvbjmthpb for the staging box", "… ist X und …").
_CLAUSE_END = re.compile(
    r"[ \t]*(?:[.,;:!?)\]}…。、！？]|\r?\n|\Z|[-–—][ \t])"
    r"|[ \t]+(?i:" + "|".join(sorted(languages.CLAUSE_OPENERS)) + r")\b"
)


def _prose_token(value: str) -> bool:
    return (
        len(value) >= 16
        and _looks_random(value)
        and not _is_path_or_url(value)
        and not _HOST.fullmatch(value)
        and not _PROSE_NOT_A_PASSWORD.fullmatch(value)
    )


def _prose_phrase(text: str, start: int) -> int | None:
    """End of the passphrase that starts at ``start``: the rest of its sentence, if it is one."""
    stop = _PROSE_PHRASE_END.search(text, start, min(len(text), start + 240))
    end = stop.start() if stop else min(len(text), start + 240)
    phrase = text[start:end].rstrip()
    words = phrase.split()
    if len(words) == 1:
        word = words[0].rstrip(_PROSE_TRAILING)
        return start + len(word) if _prose_password(word) or _dashed_passphrase(word) else None
    if not 3 <= len(words) <= 24 or stop is None and end - start >= 240:
        return None
    lowered = [word.lower().strip("'’") for word in words]
    function_words = sum(word in _PROSE_FUNCTION_WORDS for word in lowered)
    if (
        not all(_PROSE_PHRASE_WORD.fullmatch(word) for word in words)
        or lowered[0] in _PROSE_FUNCTION_WORDS
        or lowered[1] in _PROSE_FUNCTION_WORDS
        or (len(lowered[0]) >= 5 and lowered[0].endswith(("ed", "ing", "ly")))
        or function_words * 4 > len(words)
        or _is_placeholder(phrase)
    ):
        return None  # "stored in the keychain", "required to unlock the disk", "twelve words long"
    return start + len(phrase)


def _prose_label(text: str, noun: re.Match[str]) -> tuple[str, int] | None:
    """What a noun names (``password``, ``phrase`` or ``token``) and where its label starts."""
    word = noun.group().lower()
    start = noun.start()
    if word in ("password", "passwd", "passcode", "pwd", "pw") or word in languages.PASSWORD_LABELS:
        return "password", start
    if word == "passphrase":
        return "phrase", start
    if word in ("token", "secret"):
        return "token", start
    qualifier = _PROSE_QUALIFIERS[word].search(text, max(0, start - 10), start)
    if qualifier is None:
        return None  # "the phrase is", "the key is", "in other words": nothing secret named
    return ("token" if word == "key" else "phrase"), qualifier.start()


def _prose_secrets(text: str) -> Iterator[Span]:
    examined_until = 0
    connectors: list[int] | None = None  # where "is", "was", ":", "=", "→" start; found once, if needed
    for noun in _prose_nouns(text):
        label = _prose_label(text, noun)
        if label is None:
            continue
        credential, start = label
        end = noun.end()
        compound = noun.group().lower() in languages.COMPOUND_LABELS  # "WLAN-Passwort", "Rootkennwort"
        if start < examined_until or (start and text[start - 1] in _PROSE_NOT_AFTER and not compound):
            continue
        if connectors is None:
            connectors = [match.start() for match in _PROSE_CONNECTOR.finditer(text)]
        index = bisect.bisect_left(connectors, end)
        if index == len(connectors) or connectors[index] > end + _PROSE_REACH:
            continue  # no verb within reach: "token" in a list of words, most mentions of a key
        tail = _PROSE_TAIL.match(text, end)
        if tail is None:
            continue
        bridge = tail.group("bridge").split()
        if bridge and bridge[0].lower() not in _PROSE_BRIDGE_OPENERS:
            continue
        if credential == "token" and _CURSOR_BEFORE.search(text[max(0, start - 24) : start].rstrip()):
            continue  # "the next page token is …": a cursor
        examined_until = tail.end()  # a label inside this value ("password: password: …") is part of it
        value_start, value_end = tail.span("value")
        raw = tail.group("value")
        quoted = raw[:1] in _PROSE_QUOTES
        if quoted:
            value_start, value_end = value_start + 1, value_end - 1
        if credential == "phrase":
            if quoted:
                phrase = text[value_start:value_end]
                if len(phrase) < 6 or _is_placeholder(phrase):
                    continue
            else:
                found_end = _prose_phrase(text, value_start)
                if found_end is None:
                    continue
                value_end = found_end
        else:
            value = text[value_start:value_end]
            if not quoted:
                value = value.rstrip(_PROSE_TRAILING)
                value_end = value_start + len(value)
            if credential == "password":
                ends_clause = quoted or _CLAUSE_END.match(text, value_end) is not None
                if not _stated_password(value, ends_clause):
                    continue
                if not quoted:
                    value_end = _with_bangs(text, value_end)
            elif not _prose_token(value):
                continue
        examined_until = value_end
        yield "prose_secret", value_start, value_end


# Japanese, Chinese, Korean, Russian: the label, a few words ending in a particle or a dash (or
# nothing, or a colon), then the value, the run of Latin characters that follows.
_SCRIPT_LABEL = _label_scan(languages.SCRIPT_LABELS, "(?![а-яёА-ЯЁ]|화|学|學)")
_SCRIPT_BRIDGE_REACH = 24
_SCRIPT_QUOTES = " \t\u3000「『“\"'`«"
_SCRIPT_VALUE = re.compile(r"[:=]?[ \t]*[\"'`]?(?P<value>[!-~]{1,128})")
_SCRIPT_CLAUSE_STOPS = frozenset("。、，,.！!？?；;\n")


def _script_passwords(text: str) -> Iterator[Span]:
    for label in _SCRIPT_LABEL.finditer(text):
        end = label.end()
        limit = min(len(text), end + _SCRIPT_BRIDGE_REACH)
        position = end
        while position < limit and not ("!" <= text[position] <= "~") and text[position] != "\n":
            position += 1
        if position == limit or text[position] == "\n":
            continue
        bridge = text[end:position]
        if not _SCRIPT_CLAUSE_STOPS.isdisjoint(bridge) or not languages.SCRIPT_OBJECT_MARKERS.isdisjoint(
            bridge
        ):
            continue  # another clause, or the password as the object of a verb: "パスワードを忘れた場合は…"
        joined = bridge.strip(_SCRIPT_QUOTES)
        colon = text[position] in ":="
        connected = colon or joined.endswith(languages.SCRIPT_CONNECTORS)
        if joined and not connected:
            continue  # "Пароль хранится в виде хеша …", "密码使用 …": a sentence about the password
        value_match = _SCRIPT_VALUE.match(text, position)
        if value_match is None:
            continue
        value = value_match.group("value").rstrip(_PROSE_TRAILING + "`")
        start = value_match.start("value")
        # "パスワードはXです": the script ends the value; a bare "пароль X" must end its clause
        ends_clause = connected or _CLAUSE_END.match(text, start + len(value)) is not None
        if _stated_password(value, ends_clause):
            yield "prose_secret", start, _with_bangs(text, start + len(value))


def _with_bangs(text: str, end: int) -> int:
    """A stated password's end past the ``!`` right after it: passwords often end in one, and a
    sentence's exclamation mark taken in costs nothing where a password's last character left
    out is a piece of it on disk."""
    while end < len(text) and text[end] == "!":
        end += 1
    return end


# --- personal data -------------------------------------------------------------------------------

_EMAIL_DOMAIN = re.compile(r"@(?P<domain>(?:[A-Za-z0-9-]{1,63}\.){1,8}(?P<tld>[A-Za-z]{2,24}))(?![\w-])")
_EMAIL_LOCAL_PART = re.compile(r"[A-Za-z0-9][A-Za-z0-9._%+-]{0,63}\Z")
_EMAIL_LOCAL_CHARS = _WORD | set(".%+-")
_NOT_TLDS = _words(
    "png jpg jpeg gif svg webp ico js mjs ts tsx jsx py rb go rs java kt css scss html htm json yaml "
    "yml toml md txt lock zip gz tar whl so dll exe wasm map pdf csv xml"
)
_DOCUMENTATION_DOMAINS = re.compile(
    r"(?i)(?:^|\.)(?:example\.(?:com|org|net)|example|test|invalid|localhost)$"
)


def _emails(text: str) -> Iterator[Span]:
    for match in _EMAIL_DOMAIN.finditer(text):
        local = _EMAIL_LOCAL_PART.search(text, max(0, match.start() - 64), match.start())
        if (
            local is None
            or (local.start() and text[local.start() - 1] in _EMAIL_LOCAL_CHARS)
            or match.group("tld").lower() in _NOT_TLDS
            or _DOCUMENTATION_DOMAINS.search(match.group("domain"))
            or text.endswith("://", 0, local.start())  # ssh://git@github.com: a login, not a mailbox
        ):
            continue
        yield "email", local.start(), match.end()


_PHONE_PATTERNS = (
    # +44 20 7946 0958, +49 (0)30 123456, +14155552671
    re.compile(
        r"\+\d{1,4}(?:[ .-]?\(\d{1,4}\)\d{0,8}|[ .-]\d{1,8}){1,6}(?![\w-]|\.\d)|\+\d{8,15}(?![\w-]|\.\d)"
    ),
    # (415) 555-0132 and 415-555-0132, 415.555.0132: North American numbers with separators
    re.compile(r"\([2-9]\d{2}\)[ .-]?[2-9]\d{2}[ .-]\d{4}(?![\w-]|\.\d)"),
    re.compile(r"[2-9]\d{2}[ .-][2-9]\d{2}[ .-]\d{4}(?![\w-]|\.\d)"),
)
_PHONE_NOT_AFTER = _WORD | set("+)/.-")


def _phones(text: str) -> Iterator[Span]:
    for pattern in _PHONE_PATTERNS:
        for match in pattern.finditer(text):
            if match.start() and text[match.start() - 1] in _PHONE_NOT_AFTER:
                continue
            digits = sum(c.isdigit() for c in match.group())
            if 8 <= digits <= 15:
                yield "phone", match.start(), match.end()


_CARD = re.compile(r"\b\d(?:[ -]?\d){12,18}+(?![\d-]|\.\d)")
_CARD_NOT_AFTER = frozenset(string.digits + ".-")
_CARD_ISSUERS = re.compile(r"4|5[1-5]|2[2-7]|3[47]|3[0689]|6(?:011|5|4[4-9]|2)|35")


def _luhn_valid(digits: str) -> bool:
    total = 0
    for index, char in enumerate(reversed(digits)):
        number = int(char)
        if index % 2:
            number = number * 2 - 9 if number > 4 else number * 2
        total += number
    return total % 10 == 0


def _cards(text: str) -> Iterator[Span]:
    for match in _CARD.finditer(text):
        if match.start() and text[match.start() - 1] in _CARD_NOT_AFTER:
            continue
        candidate = match.group()
        digits = candidate.replace(" ", "").replace("-", "")
        if (" " in candidate and "-" in candidate) or not _CARD_ISSUERS.match(digits):
            continue
        if _luhn_valid(digits):
            yield "credit_card", match.start(), match.end()


_IPV4 = re.compile(r"\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}(?!\w|\.\d)")
_IPV6_SEED = re.compile(r":[0-9A-Fa-f]{0,4}:")
_IPV6_CHARS = frozenset(string.hexdigits + ":.")
_VERSION_BEFORE = re.compile(r"(?i)\b(?:version|ver|release|build|v)[ \t:=]*\Z")
_DOCUMENTATION_NETWORKS = tuple(
    ipaddress.ip_network(network)
    for network in ("192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24", "2001:db8::/32")
)


def _ipv6_candidates(text: str) -> Iterator[tuple[int, int]]:
    """Runs of hex digits and colons around each ``:x:``, grown to their ends."""
    covered = -1
    for seed in _IPV6_SEED.finditer(text):
        if seed.start() < covered:
            continue
        start, end = seed.start(), seed.end()
        while start > 0 and seed.start() - start < 40 and text[start - 1] in _IPV6_CHARS:
            start -= 1
        while end < len(text) and end - seed.end() < 40 and text[end] in _IPV6_CHARS:
            end += 1
        covered = end
        while end > start and text[end - 1] == ".":
            end -= 1
        if (start and (text[start - 1] in _WORD)) or (end < len(text) and text[end] in _WORD):
            continue
        groups = [group for group in text[start:end].split(":") if group]
        if len(groups) >= 3 or any(len(group) == 4 for group in groups):  # not a slice or a time
            yield start, end


def _ip_addresses(text: str) -> Iterator[Span]:
    spans = [
        match.span()
        for match in _IPV4.finditer(text)
        if not (match.start() and text[match.start() - 1] in _WORD | {"."})
    ]
    for start, end in spans + list(_ipv6_candidates(text)):
        try:
            address = ipaddress.ip_address(text[start:end])
        except ValueError:
            continue
        if (
            address.is_loopback
            or address.is_unspecified
            or text.startswith("255.", start)
            or any(address in network for network in _DOCUMENTATION_NETWORKS)
            or _VERSION_BEFORE.search(text, max(0, start - 10), start)
        ):
            continue
        yield "ip_address", start, end


# --- putting it together -------------------------------------------------------------------------

_SECRET_DETECTORS: tuple[Detector, ...] = (
    *_RULES,
    *_COMMAND_OPTIONS,
    _aws_secret_keys,
    _url_credentials,
    _private_keys,
    _base64_private_keys,
    _aws_secrets_beside_key_ids,
    _aws_secrets_in_prose,
    _env_secrets,
    _assignments,
    _prose_secrets,
    _script_passwords,
)
_PII_DETECTORS: tuple[Detector, ...] = (_cards, _emails, _phones, _ip_addresses)


def _merge(spans: list[Span], protected: list[tuple[int, int]]) -> list[Finding]:
    """Union of overlapping spans, each named after its longest member; placeholders untouched."""
    protected_ends = [end for _, end in protected]
    merged: list[Finding] = []
    group_kind, group_start, group_end, best = "", 0, 0, (0, 0)
    for kind, start, end in sorted(spans, key=lambda span: (span[1], span[2])):
        index = bisect.bisect_right(protected_ends, start)
        if end <= start or (index < len(protected) and protected[index][0] < end):
            continue  # empty, or it would cut into a placeholder
        score = (end - start, -_RANK[kind])
        if start < group_end:
            group_end = max(group_end, end)
            if score > best:
                group_kind, best = kind, score
            continue
        if group_kind:
            merged.append(Finding(group_kind, group_start, group_end))
        group_kind, group_start, group_end, best = kind, start, end, score
    if group_kind:
        merged.append(Finding(group_kind, group_start, group_end))
    return merged


def redact(text: str, *, pii: bool = False) -> Redaction:
    """Replace every secret (and, with ``pii``, personal data) by ``[REDACTED:<kind>]``."""
    if not text:
        return Redaction(text, ())
    detectors = _SECRET_DETECTORS + _PII_DETECTORS if pii else _SECRET_DETECTORS
    spans = [span for detector in detectors for span in detector(text)]
    if not spans:
        return Redaction(text, ())
    protected = [match.span() for match in PLACEHOLDER.finditer(text)]
    findings = _merge(spans, protected)
    pieces, position = [], 0
    for finding in findings:
        pieces += [text[position : finding.start], f"[REDACTED:{finding.kind}]"]
        position = finding.end
    pieces.append(text[position:])
    return Redaction("".join(pieces), tuple(findings))


def redact_value(value: Any, *, pii: bool = False) -> tuple[Any, int]:
    """Redact every string inside ``value`` (dicts, lists, tuples); return it and the count.

    A string under a key that names a secret (``password``, ``api_key``, ``DB_TOKEN`` …) is
    redacted whole when it looks like a real value, since it has no ``key=`` of its own to give
    it away. Keys themselves and non-string leaves are kept as they are.
    """
    if isinstance(value, str):
        result = redact(value, pii=pii)
        return result.text, len(result.findings)
    if isinstance(value, dict):
        redacted: dict[Any, Any] = {}
        total = 0
        for key, item in value.items():
            redacted[key], count = redact_value(item, pii=pii)
            if (
                not count
                and isinstance(key, str)
                and isinstance(item, str)
                and _is_secret_under_name(key, item)
            ):
                redacted[key], count = "[REDACTED:password_assignment]", 1
            total += count
        return redacted, total
    if isinstance(value, (list, tuple)):
        items, counts = [], 0
        for item in value:
            new_item, count = redact_value(item, pii=pii)
            items.append(new_item)
            counts += count
        return (items if isinstance(value, list) else tuple(items)), counts
    return value, 0


def _is_secret_under_name(name: str, value: str) -> bool:
    strength = _secret_name_strength(name)
    if strength is None or _is_placeholder(value) or _is_path_or_url(value):
        return False
    if strength == "token":
        return len(value) >= 8 and _looks_random(value)
    return len(value) >= 4
