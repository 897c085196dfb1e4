"""Personal data, masked only when asked (``redact(text, pii=True)``): email addresses, phone
numbers, payment card numbers (issuer prefix and Luhn checksum) and IP addresses. Documentation
domains and networks, loopback addresses, file names and version numbers are left alone.
"""

from __future__ import annotations

import ipaddress
import re
import string
from collections.abc import Iterator

from .scan import WORD, Span, words

_EMAIL_DOMAIN = re.compile(r"@(?P<domain>(?:[A-Za-z0-9-]{1,63}\.){1,8}(?P<tld>[A-Za-z]{2,24}))(?![\w-])")
_EMAIL_LOCAL_PART = re.compile(r"[A-Za-z0-9][A-Za-z0-9._%+-]{0,63}\Z")
_EMAIL_LOCAL_CHARS = WORD | set(".%+-")
_NOT_TLDS = words(
    "png jpg jpeg gif svg webp ico js mjs ts tsx jsx py rb go rs java kt css scss html htm json yaml "
    "yml toml md txt lock zip gz tar whl so dll exe wasm map pdf csv xml"
)
_DOCUMENTATION_DOMAINS = re.compile(
    r"(?i)(?:^|\.)(?:example\.(?:com|org|net)|example|test|invalid|localhost)$"
)


def emails(text: str) -> Iterator[Span]:
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
_PHONE_NOT_AFTER = WORD | set("+)/.-")


def phones(text: str) -> Iterator[Span]:
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


def cards(text: str) -> Iterator[Span]:
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
        if (start and (text[start - 1] in WORD)) or (end < len(text) and text[end] in WORD):
            continue
        groups = [group for group in text[start:end].split(":") if group]
        if len(groups) >= 3 or any(len(group) == 4 for group in groups):  # not a slice or a time
            yield start, end


def ip_addresses(text: str) -> Iterator[Span]:
    spans = [
        match.span()
        for match in _IPV4.finditer(text)
        if not (match.start() and text[match.start() - 1] in WORD | {"."})
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
