"""What a memory's text says about whether it holds an answer, whatever the query (pure).

    asks(text)                                 whether the text asks a question
    length_prior(scored, lengths, exponent)    short memories move down (best first)
    asks_when(query), names_a_time(text)       a question about when; a text that says when
    time_boost(scored, texts, share)           memories that say when move up (best first)
    speaker(text), named_speakers(query, ...)  who says a turn; the speakers a query names
    speaker_first(scored, speakers, named, share)  the named speakers' own turns move up
    role(value), asked_role(query)             a turn's role; whose turns a query asks about
    role_first(scored, roles, wanted, share)   the other role's turns move down
    coverage_first(scored, texts, words, share)  memories holding more of the query's words move up
    asks_about_present(query, tense)           a question about how things stand, said or by its tense

Both correct what the retrievers cannot see. In a conversation the answer is the turn after
the question ("What breed is it?" / "A three-legged greyhound."), while the question holds the
query's words: :func:`asks` tells :func:`.conversation.propagate` which turns pass more of
their score to the turn that follows. And a short memory ("Cool! What did it look like?")
scores high in both retrievers — its embedding is close to any question's, and BM25 ranks a
short text that holds a query word above a long one — yet rarely holds the fact asked for:
:func:`length_prior` scales scores down by length. A question that asks when is answered by a
memory that says when ("I went to the fair yesterday"), as a question asking who is by one
that names a person: :func:`time_boost` ranks those up for such questions (answer-type
matching). A question about what a person said or did ("What did Maria say about the
waterfall?") is answered by that person's own turn, not by the other speaker's reply that
repeats the words: :func:`speaker_first` ranks the named speakers' turns up. In a chat between
a user and an assistant (turns whose role is known), a question about the user's own life ("How
many plants did I buy?") is answered by the user's short statement, not by the assistant's long
replies around it, while one about what the assistant said ("What did you recommend…?") is
answered by the assistant: :func:`role_first` ranks the other role's turns down. The dense
half ranks by meaning and BM25 by a few rare words, so a memory that holds most of what the
question names ("the hikes I did on two consecutive weekends": hikes, consecutive, weekends) can
rank behind one that shares a single word or only the topic: :func:`coverage_first` ranks the
first candidates up by the share of the query's words they hold. docs/search.md has the
measurements.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache

from .relative_dates import asks_present

#: A question mark that ends a sentence: after a non-space character and before a space, a
#: closing quote or bracket, more punctuation or the end. Not the ``?`` of a URL's query string
#: (``?q=1``) or of code (``a ? b : c``). The full-width ``？`` of Chinese and Japanese anywhere.
_QUESTION = re.compile(r"\S\?+(?=[\s\"'”’)\]!.…]|$)|？")
#: A question about when something happened (at the start of the query).
_WHEN = re.compile(
    r"\s*(?:when\b|what\s+(?:date|day|time|year|month|week)\b|how\s+long\s+ago\b|"
    r"(?:in|on)\s+which\s+(?:date|day|year|month|week)\b)",
    re.IGNORECASE,
)
#: Words that place a text in time: relative days and spans, weekdays, months, years.
_TIME = re.compile(
    r"\b(?:yesterday|today|tonight|tomorrow|ago|last|next|recently|lately|earlier|weekend|"
    r"(?:mon|tues|wednes|thurs|fri|satur|sun)day|january|february|march|april|may|june|july|"
    r"august|september|october|november|december|(?:19|20)\d\d)\b",
    re.IGNORECASE,
)
#: A speaker label opening a conversation turn: "Caroline: ...", "Ann Lee: ...", "User: ...".
#: The shape policy/hygiene_rules.py strips from a statement; neither layer may import the other.
SPEAKER_LABEL = re.compile(r"^\s*([A-Z][A-Za-z'’-]{0,19}(?: [A-Z][A-Za-z'’-]{0,19})?):\s+")
#: The most characters a speaker label (with the space before it) takes at a text's start.
SPEAKER_LABEL_CHARS = 48
#: Labels that name a role, not a person: a captured Claude Code turn opens with one
#: (memories/recall/hook_events.py), and a query that says "User" names no speaker.
ROLE_LABELS = frozenset({"User", "Assistant"})
#: The roles a turn of a chat between a user and an assistant can have (a memory's
#: ``metadata.role``, as a chat client writes it; other values are no role).
ROLES = frozenset({"user", "assistant"})
#: A question about what the assistant said or did: "what did you recommend", "you told me",
#: "our previous conversation", "your suggestion". Checked before :data:`_FIRST_PERSON`: such
#: questions are mostly asked in the first person too ("Can you remind me what you said…").
_ASKS_ASSISTANT = re.compile(
    r"\b(?:you\s+(?:\w+\s+)?(?:told|said|mentioned|suggested|recommended|gave|provided|shared|"
    r"listed|explained|described|wrote|created|made|showed|named|offered|proposed|came\s+up)\b|"
    r"did\s+you\b|your\s+(?:\w+\s+)?(?:suggestions?|recommendations?|advice|answers?|"
    r"responses?|lists?|explanations?|replies|reply|tips?)\b|"
    r"(?:our|the)\s+(?:previous|earlier|last|past)\s+(?:conversation|chat|discussion|session)\b)",
    re.IGNORECASE,
)
#: The user speaking of themselves: "I", "my", "me" (a capitalised "I" only: "i" is rare in a
#: question and "I" in other words is not matched, the word boundaries see to that).
_FIRST_PERSON = re.compile(r"\b(?:I|I'm|I've|I'd|I'll|[Mm]e|[Mm]y|[Mm]ine|[Mm]yself)\b")
#: "me" as the one a request is made of ("tell me", "remind me of", "show me"): such a question
#: asks for something, it is not about the user ("Tell me the capital of France"). Left out
#: before :data:`_FIRST_PERSON` looks.
_REQUEST_OF_ME = re.compile(r"\b(?:tell|give|show|remind|help|let|send|teach|ask|get|find|list)\s+me\b", re.I)
#: A question put in the present tense: "Where does Priya work?", "How many cats do I have?",
#: "How often do I go…", "Where am I staying…", "How long have I had…", "What can I redeem…".
_PRESENT_TENSE = re.compile(
    r"\b(?:do|does|am|is|are|have|has|can)\b|\b(?:don't|doesn't|isn't|aren't|haven't|hasn't|can't)",
    re.IGNORECASE,
)
#: What puts a question in the past, or away from how things stand: a past verb ("did", "was"),
#: the old state ("used to", "previous", "before", "first"), a time before the present ("ago",
#: "last", "yesterday"), or a conditional ("would"), each of which the newest memory need not
#: answer.
_NOT_PRESENT = re.compile(
    r"\b(?:did|didn't|was|wasn't|were|weren't|would|will|used\s+to|previous(?:ly)?|before|formerly|"
    r"initially|originally|first|earliest|ago|last|yesterday)\b",
    re.IGNORECASE,
)
#: A query word is looked for by its first this many letters, at the start of a word of the
#: text ("consecutive" as "conse", "weekends" as "weeke", which "weekend" holds): a truncation
#: stemmer, crude but close to Porter's for English. A shorter word must begin a word whole.
STEM_LETTERS = 5
#: Lengths are compared with this quantile of the candidates' lengths: a memory at least that
#: long keeps its score, a shorter one loses by its share of it.
REFERENCE_QUANTILE = 0.75


def asks(text: str) -> bool:
    """Whether the text asks a question (a sentence ends with a question mark)."""
    return _QUESTION.search(text) is not None


def length_prior(
    scored: Sequence[tuple[str, float]],
    lengths: Mapping[str, int],
    exponent: float,
    most: int = 0,
) -> list[tuple[str, float]]:
    """Each score times ``(length / reference) ** exponent``, at most 1; best first.

    ``lengths``: each memory's length in characters (a memory without one keeps its score).
    The reference is the :data:`REFERENCE_QUANTILE` of the candidates' lengths, so the prior
    adapts to the store: where every memory is short, few lose much, and a long memory gains
    nothing over one of the reference length (a long text is not more likely the answer past
    that). ``most`` > 0 caps the reference at that many characters: where long replies sit among
    short turns (an assistant's pages around a user's one-line fact), the quantile would be a
    page, and a one-sentence statement would lose most of its score to it."""
    known = sorted(lengths[memory_id] for memory_id, _ in scored if memory_id in lengths)
    if not known or exponent <= 0:
        return list(scored)
    reference = max(1, known[int(REFERENCE_QUANTILE * (len(known) - 1))])
    if most > 0:
        reference = min(reference, most)
    adjusted = [
        (memory_id, score * min(1.0, max(1, lengths[memory_id]) / reference) ** exponent)
        if memory_id in lengths
        else (memory_id, score)
        for memory_id, score in scored
    ]
    return sorted(adjusted, key=lambda pair: pair[1], reverse=True)


def asks_when(query: str) -> bool:
    """Whether the query asks when something happened ("When did…", "What date…")."""
    return _WHEN.match(query) is not None


def names_a_time(text: str) -> bool:
    """Whether the text says when: a relative day or span, a weekday, a month or a year."""
    return _TIME.search(text) is not None


def time_boost(
    scored: Sequence[tuple[str, float]], texts: Mapping[str, str], share: float
) -> list[tuple[str, float]]:
    """Each memory whose text names a time gains ``share`` of its score; best first."""
    boosted = [
        (memory_id, score * (1 + share) if names_a_time(texts.get(memory_id, "")) else score)
        for memory_id, score in scored
    ]
    return sorted(boosted, key=lambda pair: pair[1], reverse=True)


def speaker(text: str) -> str | None:
    """The speaker label a conversation turn opens with ("Maria" of "Maria: I joined a gym"),
    or None: no label, or one that names a role (:data:`ROLE_LABELS`)."""
    label = SPEAKER_LABEL.match(text)
    if label is None or label.group(1) in ROLE_LABELS:
        return None
    return label.group(1)


def named_speakers(query: str, speakers: Iterable[str | None]) -> set[str]:
    """The ``speakers`` the query names: the whole label, or its first word ("Ann" of "Ann
    Lee"), as a word of its own and capitalised as the label is."""
    named = set()
    for label in {label for label in speakers if label}:
        first = label.split(" ", 1)[0]
        if re.search(rf"\b(?:{re.escape(label)}|{re.escape(first)})\b", query):
            named.add(label)
    return named


def speaker_first(
    scored: Sequence[tuple[str, float]], speakers: Mapping[str, str | None], named: set[str], share: float
) -> list[tuple[str, float]]:
    """Each memory whose speaker the query names gains ``share`` of its score; best first.
    Unchanged when the query names no speaker, or names every speaker among the candidates
    (nobody's turns are told apart then)."""
    present = {label for label in speakers.values() if label}
    if not named or share <= 0 or present <= named:
        return list(scored)
    boosted = [
        (memory_id, score * (1 + share) if speakers.get(memory_id) in named else score)
        for memory_id, score in scored
    ]
    return sorted(boosted, key=lambda pair: pair[1], reverse=True)


def role(value: object) -> str | None:
    """A turn's role from its ``metadata.role`` ("user", "assistant", any case), else None."""
    if not isinstance(value, str):
        return None
    lowered = value.strip().lower()
    return lowered if lowered in ROLES else None


def asked_role(query: str) -> str | None:
    """Whose turns answer the query in a chat between a user and an assistant: "assistant" for
    a question about what the assistant said or did, "user" for one in the first person about
    the user ("Where did I…", "my sister"), None for neither (it names nobody's turns)."""
    if _ASKS_ASSISTANT.search(query):
        return "assistant"
    if _FIRST_PERSON.search(_REQUEST_OF_ME.sub(" ", query)):
        return "user"
    return None


def role_first(
    scored: Sequence[tuple[str, float]], roles: Mapping[str, str | None], wanted: str | None, share: float
) -> list[tuple[str, float]]:
    """Each memory whose role is known and not ``wanted`` has its score divided by 1 + ``share``;
    best first. Memories without a role keep theirs (a fact written by a client that gives none
    is not a chat turn), so only the turns of the other role move, down."""
    if wanted is None or share <= 0:
        return list(scored)
    demoted = [
        (memory_id, score / (1 + share) if roles.get(memory_id) not in (None, wanted) else score)
        for memory_id, score in scored
    ]
    return sorted(demoted, key=lambda pair: pair[1], reverse=True)


def stems(words: Iterable[str]) -> list[str]:
    """The query words (lower case, three letters or more) as the prefixes :func:`coverage_first`
    looks for: each cut to :data:`STEM_LETTERS` letters, duplicates dropped."""
    return list(dict.fromkeys(word[:STEM_LETTERS] for word in words if len(word) > 2))


def coverage(text: str, prefixes: Sequence[str]) -> float:
    """The share of ``prefixes`` that begin a word of ``text`` (any case)."""
    if not prefixes:
        return 0.0
    return len(_found(text, _prefix_pattern(tuple(prefixes)))) / len(set(prefixes))


@lru_cache(maxsize=256)
def _prefix_pattern(prefixes: tuple[str, ...]) -> re.Pattern[str]:
    """One pattern for all the prefixes, longest first (so "weeke" is not taken as "week")."""
    alternatives = "|".join(re.escape(p) for p in sorted(set(prefixes), key=len, reverse=True))
    return re.compile(rf"\b(?:{alternatives})")


def _found(text: str, pattern: re.Pattern[str]) -> set[str]:
    """The prefixes that begin a word of ``text``: one pass over the text for all of them (a
    word is taken by the longest prefix it begins with, so "week" counts only where a word
    begins "week" and not "weeke")."""
    return set(pattern.findall(text.lower()))


def coverage_first(
    scored: Sequence[tuple[str, float]], texts: Mapping[str, str], prefixes: Sequence[str], share: float
) -> list[tuple[str, float]]:
    """Each memory with a text in ``texts`` gains ``share`` × its :func:`coverage` of the query's
    word ``prefixes`` (:func:`stems`); best first. Unchanged for a query of fewer than two words
    (one word tells nothing apart that the retrievers did not)."""
    if share <= 0 or len(prefixes) < 2:
        return list(scored)
    pattern, words = _prefix_pattern(tuple(prefixes)), len(set(prefixes))  # once, not per text
    boosted = [
        (
            memory_id,
            score * (1 + share * (len(_found(texts[memory_id], pattern)) / words))
            if memory_id in texts
            else score,
        )
        for memory_id, score in scored
    ]
    return sorted(boosted, key=lambda pair: pair[1], reverse=True)


def asks_about_present(query: str, tense: bool = True) -> bool:
    """Whether the query asks how things stand, so that of two memories that disagree the newer
    answers: it says so ("now", "currently", "so far": :func:`.relative_dates.asks_present`), or,
    with ``tense``, it is put in the present tense ("Where does Priya work?", "How often do I go to
    the gym?") and nothing in it points to the past or to the old state."""
    if asks_present(query):
        return True
    return tense and _PRESENT_TENSE.search(query) is not None and _NOT_PRESENT.search(query) is None
