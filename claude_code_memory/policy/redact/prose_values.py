"""What a value stated in prose must look like to be taken for the credential its label names.

A token looks random; a passphrase may be plain words, the rest of its sentence; a password has
a digit or a symbol, or is words joined by dashes, or is letters alone that look random or end
the clause without reading as a description ("the password is incorrect."). Shared by the
statements in languages written with spaces (``prose.py``) and in other scripts
(``prose_scripts.py``).
"""

from __future__ import annotations

import re

from . import languages
from .names import KEYWORD_INSIDE, MULTIWORD_IDENTIFIER
from .placeholders import HOST, NUMBER_OR_DURATION, is_path_or_url, is_placeholder, looks_random
from .scan import words

PROSE_TRAILING = ".,;:!?)]}'\"’”"
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
_PROSE_FUNCTION_WORDS = words(
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
        and not is_placeholder(value)
        and not is_path_or_url(value)
        and not HOST.fullmatch(value)
        and not NUMBER_OR_DURATION.fullmatch(value)
        and not _PROSE_NOT_A_PASSWORD.fullmatch(value)
    )


_ASCII_LETTERS = re.compile(r"[A-Za-z]{6,64}")
_VOWELS = frozenset("aeiouy")
_LONGEST_CONSONANT_RUN = re.compile(r"[b-df-hj-np-tv-xz]{5,}")
# Endings of adjectives and participles in the languages of ``languages.py``: "the password is
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
    if not _ASCII_LETTERS.fullmatch(value) or is_placeholder(value):
        return False
    lowered = value.lower()
    if lowered in languages.DESCRIPTIONS or lowered in _PROSE_FUNCTION_WORDS:
        return False
    named = (
        value[0].isupper() and value[1].islower()
    )  # PostgreSQL, Kubernetes: a name, unless it ends the clause
    if _letters_look_random(lowered) and not named and not MULTIWORD_IDENTIFIER.fullmatch(value):
        return True
    return (
        ends_clause
        and not MULTIWORD_IDENTIFIER.fullmatch(value)  # passwordHash, userSecret
        and not KEYWORD_INSIDE.search(value)  # dbpassword, usersecret
        # an ending decides only for a word with no unusual pair past a prefix ("un|breakable")
        and (_DESCRIPTION_ENDING.search(lowered) is None or _unusual_pairs(lowered[2:]) > 0)
    )


# Words that open compounds rather than passphrases: "end-to-end", "per-user-scoped", "one-time-use".
_COMPOUND_PARTS = words(
    "per non pre re co sub self multi cross once read write only use time single double out up down off"
)
_DASHED_WORDS = re.compile(r"[A-Za-z]{3,12}(?:-[A-Za-z]{3,12}){2,9}")


def _dashed_passphrase(value: str) -> bool:
    """``correct-horse-battery-staple``: three words or more joined by dashes, none a little word."""
    if not _DASHED_WORDS.fullmatch(value) or is_placeholder(value) or _PROSE_NOT_A_PASSWORD.fullmatch(value):
        return False
    parts = value.lower().split("-")
    return not any(part in _PROSE_FUNCTION_WORDS or part in _COMPOUND_PARTS for part in parts)


def stated_password(value: str, ends_clause: bool) -> bool:
    """What a password label's verb may be followed by, in any language."""
    return _prose_password(value) or _letters_password(value, ends_clause) or _dashed_passphrase(value)


# After a value, what ends its clause: punctuation, the end of the line, or a word that starts
# another ("… is kiyqvbjmthpb for the staging box", "… ist X und …").
CLAUSE_END = re.compile(
    r"[ \t]*(?:[.,;:!?)\]}…。、！？]|\r?\n|\Z|[-–—][ \t])"
    r"|[ \t]+(?i:" + "|".join(sorted(languages.CLAUSE_OPENERS)) + r")\b"
)


def prose_token(value: str) -> bool:
    return (
        len(value) >= 16
        and looks_random(value)
        and not is_path_or_url(value)
        and not HOST.fullmatch(value)
        and not _PROSE_NOT_A_PASSWORD.fullmatch(value)
    )


def prose_phrase(text: str, start: int) -> int | None:
    """End of the passphrase that starts at ``start``: the rest of its sentence, if it is one."""
    stop = _PROSE_PHRASE_END.search(text, start, min(len(text), start + 240))
    end = stop.start() if stop else min(len(text), start + 240)
    phrase = text[start:end].rstrip()
    words = phrase.split()
    if len(words) == 1:
        word = words[0].rstrip(PROSE_TRAILING)
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
        or is_placeholder(phrase)
    ):
        return None  # "stored in the keychain", "required to unlock the disk", "twelve words long"
    return start + len(phrase)


def with_bangs(text: str, end: int) -> int:
    """A stated password's end past the ``!`` right after it: passwords often end in one, and a
    sentence's exclamation mark taken in costs nothing where a password's last character left
    out is a piece of it on disk."""
    while end < len(text) and text[end] == "!":
        end += 1
    return end
