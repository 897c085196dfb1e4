"""A labelled corpus for the hygiene job: planted duplicates, paraphrases, superseded facts, junk,
memories nobody recalls, and look-alikes of each that must be kept. Written here, from templates
of our own; ``python tests/corpora/hygiene_corpus.py`` rewrites ``hygiene/labelled.jsonl``.

Each line is one memory::

    {"key": "k0042", "text": "...", "age_days": 12, "recalled_days_ago": 3 | null,
     "label": "keep" | "duplicate" | "superseded" | "superseding" | "junk" | "stale",
     "group": "dup-07" | null,        # every memory of one planted duplicate cluster
     "supersedes": "k0041" | null,    # on the newer of a superseded pair
     "lookalike": "..." | null}       # what a kept memory looks like (and must not be taken for)

``age_days`` is how long ago it was written; ``recalled_days_ago`` when a search last returned it
(null: never). A ``stale`` memory is old and never recalled; everything else was recalled lately
or is new, so the stale rule alone speaks for it.
"""

from __future__ import annotations

import json
import random
import re
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent / "hygiene"
CORPUS = HERE / "labelled.jsonl"
SEED = 21

SERVICES = [
    "billing", "search", "auth", "checkout", "notifications", "reporting", "ingest", "gateway",
    "scheduler", "inventory", "payments", "analytics", "export", "thumbnailer", "mailer", "ledger",
]  # fmt: skip
PEOPLE = ["Alice", "Bob", "Priya", "Chen", "Marta", "Kofi", "Sven", "Aiko", "Diego", "Lena", "Omar", "Zoe"]
DATABASES = [("Postgres", "14", "16"), ("MySQL", "5.7", "8.0"), ("Redis", "6", "7"), ("MongoDB", "5", "7")]
LANGUAGES = [("Python", "3.10", "3.12"), ("Node", "18", "20"), ("Go", "1.21", "1.22"), ("Java", "17", "21")]
TOOLS = ["pnpm", "poetry", "uv", "yarn", "cargo", "bazel", "make", "tox"]
#: Subjects of the look-alikes of superseded pairs: none of them has a superseded fact.
OTHER_SERVICES = [
    "orders", "profiles", "catalog", "shipping", "media", "audit", "webhooks", "sessions", "pricing",
    "identity", "storage", "metrics", "queue", "cdn", "backup", "translation", "routing", "tax",
]  # fmt: skip
EDITORS = ["VS Code", "Vim", "Emacs", "IntelliJ", "Zed", "Sublime Text"]

# A fact stated twice: (first, paraphrase). Near-duplicates the merge must catch.
PARAPHRASES = [
    ("The user prefers dark mode in every editor.", "User likes dark mode in all of their editors."),
    ("Always run the linter before committing.", "Run the linter before every commit."),
    ("The team deploys on Tuesdays and Thursdays.", "Deploys happen every Tuesday and Thursday."),
    ("Code reviews need two approvals before merging.", "Merging requires two approving code reviews."),
    ("The user wants short commit messages in the imperative mood.",
     "Commit messages should be short and written in the imperative mood."),
    ("Integration tests run against a real database, never mocks.",
     "Integration tests must use a real database rather than mocks."),
    ("The staging cluster is shut down every night to save money.",
     "To save money the staging cluster shuts down each night."),
    ("Prefer composition over inheritance in this codebase.",
     "This codebase prefers composition to inheritance."),
    ("The user is based in Berlin and works on Central European Time.",
     "User lives in Berlin, working in Central European Time."),
    ("Log messages must never contain personal data.", "Never put personal data in log messages."),
    ("Feature flags are removed within two weeks of a full rollout.",
     "Remove feature flags within two weeks after they are fully rolled out."),
    ("The on-call rotation changes every Monday morning.", "On-call rotation switches each Monday morning."),
    ("Database migrations must be backwards compatible for one release.",
     "Migrations have to stay backwards compatible for one release."),
    ("The user likes answers with code examples rather than long prose.",
     "User prefers code examples over long prose in answers."),
    ("Secrets are kept in the vault, never in environment files.",
     "Keep secrets in the vault and never in env files."),
    ("The frontend uses server-side rendering for the landing pages.",
     "Landing pages in the frontend are rendered server-side."),
    ("Pull requests should stay under four hundred changed lines.",
     "Keep pull requests below four hundred changed lines."),
    ("The user writes tests first when fixing a bug.", "When fixing a bug, the user writes the tests first."),
    ("Error messages shown to users must say what to do next.",
     "User-facing error messages must tell the user what to do next."),
    ("Nightly backups are kept for thirty days.", "Backups taken nightly are retained for thirty days."),
    ("The design system uses eight pixel spacing.", "Spacing in the design system is based on eight pixels."),
    ("Benchmarks are run on a quiet machine before publishing numbers.",
     "Run benchmarks on a quiet machine before publishing any numbers."),
    ("The user dislikes emojis in commit messages.", "No emojis in commit messages, the user dislikes them."),
    ("Public APIs are versioned in the URL path.", "The public API is versioned through the URL path."),
    ("The mobile app supports the last two iOS versions.",
     "The mobile app supports the two latest iOS versions."),
]  # fmt: skip

# Look-alikes of a duplicate: near in wording, different in fact (a negation or another thing).
NEAR_MISSES = [
    ("The user prefers tabs for indentation.", "The user does not want tabs for indentation."),
    ("Use the staging database for load tests.", "Never use the staging database for load tests."),
    ("Cache invalidation runs after every deploy.", "Cache invalidation does not run after hotfix deploys."),
    ("The user prefers dark mode in VS Code.", "The user prefers light mode in Vim."),
    ("Alice reviews all changes to the billing service.", "Bob reviews all changes to the search service."),
    ("The frontend team owns the design system.", "The platform team owns the deployment pipeline."),
    (
        "Run the full test suite before tagging a release.",
        "Run only the smoke tests before a hotfix release.",
    ),
    ("The weekly sync is on Wednesday at 10:00.", "The monthly planning is on the first Friday at 14:00."),
]

# Junk: what a capture brings in that means nothing alone.
ACKNOWLEDGEMENTS = [
    "ok", "Ok.", "okay!", "thanks", "Thanks!", "thank you", "Thank you so much!", "got it", "Got it, thanks.",
    "sounds good", "Sounds good!", "great", "Great, thanks!", "perfect", "Perfect.", "cool", "nice", "lgtm",
    "LGTM!", "yes", "yep", "no", "sure", "Sure thing", "will do", "done", "Done!", "awesome, thank you",
    "ok go ahead", "yes please continue", "makes sense", "understood", "noted", "alright", "np",
    "Hi!", "hello", "bye", "cheers", "ok cool", "yes, that works", "Perfect, thank you very much!",
]  # fmt: skip
BOILERPLATES = [
    "I'll help you with that.", "Let me know if you have any other questions!", "Happy to help!",
    "Is there anything else I can help you with?", "Hope this helps!", "Here is the updated code:",
    "Great question!", "How can I help you today?", "I understand.", "I've made the changes.",
    "Sure! Let me take a look.", "Let me check that.", "The changes have been applied.",
    "As an AI language model, I cannot do that.", "Feel free to ask if anything is unclear!",
    "Here's the revised version:", "Sure, I'll help you with that. Let me know if you need any other help.",
]  # fmt: skip
TOOL_NOISES = [
    "(no output)", "No output", "Tool ran without output", "Command completed successfully",
    "Exit code 0", "exit code: 1", "Process exited with code 0", "[Request interrupted by user]",
    "[Request interrupted by user for tool use]", "<system-reminder>This is a reminder</system-reminder>",
    "File created successfully at: /tmp/scratch.py", "The file /src/app/main.py has been updated.",
    "Running...", "Installing…", "12 passed in 0.84s", "3 passed, 1 skipped in 2.10s", "==========",
    "------", "Successfully installed.", "Todos have been modified successfully. Ensure that you continue",
    "45% |█████     |", "No matches found", "(no content)",
    "Caveat: The messages below were generated by the user while running local commands.",
]  # fmt: skip
FRAGMENTS = [
    "and then",
    "the",
    "so that",
    "it is",
    "what about",
    "because",
    "if so",
    "this one",
    "and the",
    "up",
]

# Look-alikes of junk: short or polite, yet they say something worth keeping.
KEEP_DESPITE_LOOKS = [
    "Use pnpm.", "Thanks to the retry fix, deploys no longer flake.",
    "OK status 200 means the health check passed.",
    "Done: migrated the users table to UUID keys.", "Exit code 137 means the container was OOM-killed.",
    "Great results came from batching the embeddings.", "Sure-footed rollouts need the canary stage.",
    "No tabs in YAML files.", "Prefers pytest over unittest.", "Tabs for Go, spaces for Python.",
    "Running the migrations needs the admin role.", "Hello-world example lives in examples/hello.py.",
    "Port 5432 is reserved for Postgres.", "Thank-you emails are sent by the mailer service.",
    "LGTM bot merges after two approvals.", "The build takes 12 minutes on CI.",
]  # fmt: skip

FACT_TEMPLATES = [
    "The {service} service is owned by {person}.",
    "{person} is the go-to person for questions about {service}.",
    "The {service} service logs to the {service}-events topic.",
    "The {service} service has a p95 latency budget of {n} ms.",
    "Alerts for {service} page the {person} rotation.",
    "The {service} repository uses {tool} for builds.",
    "{person} prefers {editor} for editing.",
    "The {service} dashboard lives in the observability folder.",
    "Retries in {service} back off exponentially up to {n} seconds.",
    "The {service} service stores uploads in the {service}-uploads bucket.",
]

SUPERSEDE_TEMPLATES = [
    # (older, newer) with {subject}, {old}, {new}, {what}
    ("The {service} API runs on {what} {old}.", "We moved the {service} API to {what} {new}."),
    ("The {service} service listens on port {old}.", "The {service} service now listens on port {new}."),
    ("The {service} worker is written in {what} {old}.", "We upgraded the {service} worker to {what} {new}."),
    ("The {service} job runs every {old} minutes.", "The {service} job runs every {new} minutes."),
    ("The {service} team lead is {old}.", "{new} is now the {service} team lead, taking over from {old}."),
    ("The {service} deploy script uses {old}.", "The {service} deploy script switched from {old} to {new}."),
]
# Look-alikes of a superseded pair: another subject with another value; both stay true.
PARALLEL_TEMPLATES = [
    ("The {service} service listens on port {old}.", "The {other} service listens on port {new}."),
    ("The {service} API runs on {what} {old}.", "The {other} API runs on {what} {new}."),
    ("The {service} team lead is {old}.", "The {other} team lead is {new}."),
]

# Captured chat: turns labelled with their speaker ("Ann: ..."), as a chat log or a transcript
# arrives. The same two people greet, ask, thank and tell each other news again and again, with
# words of change ("now", "moved", "switched") and the other's name first: none of it is a fact
# that replaces an older one, so all of it is kept.
CHAT_PEOPLE = [
    ("Ann", "Ben"),
    ("Carla", "Dev"),
    ("Eli", "Fay"),
    ("Gus", "Hana"),
    ("Ivo", "Jun"),
    ("Kim", "Leo"),
]
CHAT_LOOKALIKES = [
    ("{a}: Hey {b}! Good to hear from you. How are things?",
     "{a}: Hey {b}! It's been a while. So much has changed since we last talked!"),
    ("{a}: Hi {b}, how was the trip to the coast?",
     "{a}: Hi {b}, how is the new flat now that you have moved in?"),
    ("{a}: Thanks, {b}! Your advice about the interview really helped.",
     "{a}: Thanks, {b}! I switched to a calmer morning routine and it helped a lot."),
    ("{a}: I went hiking with my sister last weekend. The view from the ridge was amazing!",
     "{a}: I went kayaking with my cousins on Saturday. Now I want to go every month!"),
    ("{a}: {b}, your balcony garden looks lovely. Did you plant the tomatoes yourself?",
     "{a}: {b}, the balcony garden looks even better now. What did you change?"),
    ("{a}: I started pottery classes to unwind after work.",
     "{a}: Pottery changed how I spend my evenings. Now I even help with the beginners class on Sundays!"),
    ("{a}: Wow, {b}, that sketch of the harbour is beautiful!",
     "{a}: Wow, {b}! You moved so fast on the new mural, congrats!"),
    ("{a}: My brothers have been a huge support through all of this.",
     "{a}: My brothers moved closer last year, and now they visit every week. It makes such a difference."),
    ("{a}: Remember the band I told you about? We finally saw them live.",
     "{a}: Remember when we moved the piano up three floors? Good times."),
    ("{a}: I adopted a rescue dog called Pepper last month.",
     "{a}: I now walk Pepper along the river every morning before work."),
    ("{a}: Glad the workshop went well for you, {b}.",
     "{a}: Glad you switched teams, {b}, you seem much happier now."),
    ("{a}: Good luck with the exam tomorrow, {b}!",
     "{a}: Good luck with the move to Lisbon, {b}! Tell me how the new place is."),
]  # fmt: skip
# Two people stating facts about themselves: "I" is the speaker, so one's news does not replace
# the other's. Kept.
CHAT_OTHER_SPEAKER = [
    ("{a}: I live in Lisbon these days.", "{b}: I moved to Porto last spring."),
    ("{a}: I run on a 5 km loop most mornings.", "{b}: I switched to a 10 km loop this year."),
    ("{a}: My team uses Jira for tickets.", "{b}: My team moved from Jira to Linear."),
]
# A plan or a question about a change, not the change: the older fact stays true. Kept.
CHAT_NOT_YET = [
    ("{a}: the {service} API runs on Postgres 14", "{b}: should we move the {service} API to Postgres 16?"),
    (
        "{a}: the {service} service listens on port 8082",
        "{b}: we could move the {service} service to port 9092",
    ),
    (
        "{a}: the {service} worker runs on Python 3.10",
        "{b}: we will upgrade the {service} worker to Python 3.12 next quarter",
    ),
    (
        "{a}: the {service} deploy script uses yarn",
        "{b}: maybe we switch the {service} deploy script from yarn to pnpm",
    ),
]
#: Subjects of the chat facts, each used by one pair only.
CHAT_SERVICES = [
    "wiki", "forum", "calendar", "status-page", "feedback", "docs-site", "signup", "onboarding",
    "survey", "referrals", "rewards", "invoicing", "helpdesk", "changelog", "booking", "loyalty",
    "sitemap", "crawler", "uploader", "transcoder", "geocoder", "dispatcher", "archiver", "linker",
]  # fmt: skip
# Real supersessions written as chat: a speaker label, lower case, no full stop, the change told
# by whoever made it. The older is archived.
CHAT_SUPERSEDE_TEMPLATES = [
    ("{a}: the {service} API runs on {what} {old}", "{b}: we moved the {service} API to {what} {new}"),
    (
        "{a}: the {service} service listens on port {old}",
        "{b}: heads up, the {service} service now listens on port {new}",
    ),
    (
        "{a}: the {service} worker is on {what} {old}",
        "{a}: just upgraded the {service} worker to {what} {new}",
    ),
    (
        "{a}: the {service} export runs every {old} minutes",
        "{b}: the {service} export runs every {new} minutes now",
    ),
    ("{a}: the {service} team lead is {old}", "{b}: {new} is the {service} team lead now"),
    (
        "{a}: the {service} deploy script uses {old}",
        "{b}: fyi we switched the {service} deploy script from {old} to {new}",
    ),
]
# The same news inside a longer chat turn: also real, and the rule does not see it (it compares
# single statements only, so chat around a fact hides the fact). Planted, and counted as missed.
CHAT_SUPERSEDE_IN_CHATTER = [
    (
        "{a}: the {service} cache runs on Redis 6",
        "{b}: Long day! Anyway, we moved the {service} cache to Redis 7 this morning.",
    ),
    (
        "{a}: the {service} service listens on port 8083",
        "{b}: Sorry I missed the call. The {service} service now listens on port 9093, by the way.",
    ),
    (
        "{a}: the {service} team lead is Marta",
        "{b}: Big news today. Kofi is the {service} team lead now, taking over from Marta!",
    ),
]


def build(seed: int = SEED) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    rows: list[dict[str, Any]] = []

    def add(text: str, label: str, **extra: Any) -> str:
        key = f"k{len(rows):04d}"
        recent = label not in ("stale",)
        rows.append(
            {
                "key": key,
                "text": text,
                "age_days": extra.pop("age_days", rng.randint(1, 60)),
                "recalled_days_ago": extra.pop("recalled", rng.randint(0, 20) if recent else None),
                "label": label,
                "group": extra.pop("group", None),
                "supersedes": extra.pop("supersedes", None),
                "lookalike": extra.pop("lookalike", None),
            }
        )
        return key

    used: set[str] = set()

    def fact() -> str:
        while True:
            text = rng.choice(FACT_TEMPLATES).format(
                service=rng.choice(SERVICES),
                person=rng.choice(PEOPLE),
                tool=rng.choice(TOOLS),
                editor=rng.choice(EDITORS),
                n=rng.choice([50, 100, 200, 250, 300, 500, 800, 30, 60, 120]),
            )
            # One value per subject: two budgets for one service would be a superseded pair.
            slot = re.sub(r"\d+", "#", text)
            if slot not in used:
                used.add(slot)
                return text

    # Plain facts to keep (some of them old and never recalled: stale).
    for index in range(190):
        text = fact()
        if index % 5 == 0:
            add(text, "stale", age_days=rng.randint(120, 400), recalled=None)
        elif index % 5 == 1:  # old, but recalled lately: keep
            add(text, "keep", age_days=rng.randint(120, 400), recalled=rng.randint(0, 30), lookalike="stale")
        elif index % 5 == 2:  # never recalled, but new: keep
            add(text, "keep", age_days=rng.randint(1, 30), recalled=None, lookalike="stale")
        else:
            add(text, "keep")

    # Near-duplicates: paraphrases, and copies with small edits.
    for index, (first, second) in enumerate(PARAPHRASES):
        group = f"dup-p{index:02d}"
        add(first, "duplicate", group=group)
        add(second, "duplicate", group=group)
    for index in range(30):
        base = fact()
        variants = [
            base,
            base.rstrip(".") + "!" if index % 3 == 0 else "Note: " + base,
            base.replace("The ", "the ", 1).rstrip("."),
        ][: 2 + index % 2]
        group = f"dup-e{index:02d}"
        for text in variants:
            add(text, "duplicate", group=group)

    # Look-alikes of duplicates: kept.
    for first, second in NEAR_MISSES:
        add(first, "keep", lookalike="duplicate")
        add(second, "keep", lookalike="duplicate")

    # Superseded facts: the older is archived, the newer stays.
    for index in range(48):
        older_t, newer_t = SUPERSEDE_TEMPLATES[index % len(SUPERSEDE_TEMPLATES)]
        service = SERVICES[index % len(SERVICES)]
        what, old, new = rng.choice(DATABASES if index % 2 else LANGUAGES)
        if "port" in older_t:
            old, new = str(rng.choice([8080, 8000, 3000, 5000])), str(rng.choice([9090, 9000, 4000, 7000]))
        elif "minutes" in older_t:
            old, new = str(rng.choice([5, 10, 15])), str(rng.choice([30, 45, 60]))
        elif "team lead" in older_t:
            old, new = rng.sample(PEOPLE, 2)
        elif "builds use" in older_t:
            old, new = rng.sample(TOOLS, 2)
        values = {"service": service, "what": what, "old": old, "new": new}
        age = rng.randint(40, 90)
        older = add(older_t.format(**values), "superseded", age_days=age)
        add(newer_t.format(**values), "superseding", age_days=rng.randint(1, age - 5), supersedes=older)

    # Look-alikes of superseded pairs: two subjects, two values, both kept.
    taken = {row["text"] for row in rows}
    # Each template's subjects once: one subject with two values would be a superseded pair.
    subjects = {template: rng.sample(OTHER_SERVICES, 16) for template in PARALLEL_TEMPLATES}
    for index in range(24):
        older_t, newer_t = PARALLEL_TEMPLATES[index % len(PARALLEL_TEMPLATES)]
        while True:
            service, other = subjects[PARALLEL_TEMPLATES[index % len(PARALLEL_TEMPLATES)]][:2]
            del subjects[PARALLEL_TEMPLATES[index % len(PARALLEL_TEMPLATES)]][:2]
            what, old, new = rng.choice(DATABASES)
            if "port" in older_t:
                old, new = str(rng.choice([8081, 8001, 3001])), str(rng.choice([9091, 9001, 4001]))
            elif "team lead" in older_t:
                old, new = rng.sample(PEOPLE, 2)
            values = {"service": service, "other": other, "what": what, "old": old, "new": new}
            pair = older_t.format(**values), newer_t.format(**values)
            if not taken & set(pair):
                break
        taken.update(pair)
        add(pair[0], "keep", lookalike="superseded")
        add(pair[1], "keep", lookalike="superseded")

    # Junk, and look-alikes of junk.
    for text in ACKNOWLEDGEMENTS + BOILERPLATES + TOOL_NOISES + FRAGMENTS:
        add(text, "junk")
    for text in KEEP_DESPITE_LOOKS:
        add(text, "keep", lookalike="junk")

    # Captured chat (speaker-labelled turns): look-alikes kept, supersessions found.
    for index, (older_t, newer_t) in enumerate(CHAT_LOOKALIKES * 2):
        a, b = CHAT_PEOPLE[index % len(CHAT_PEOPLE)]
        if index >= len(CHAT_LOOKALIKES):
            a, b = b, a
        age = rng.randint(20, 60)
        add(older_t.format(a=a, b=b), "keep", age_days=age, lookalike="superseded")
        add(newer_t.format(a=a, b=b), "keep", age_days=rng.randint(1, age - 5), lookalike="superseded")
    chat_services = iter(CHAT_SERVICES)
    for index, (older_t, newer_t) in enumerate(CHAT_OTHER_SPEAKER + CHAT_NOT_YET):
        a, b = CHAT_PEOPLE[index % len(CHAT_PEOPLE)]
        values = {"a": a, "b": b, "service": next(chat_services)}
        age = rng.randint(20, 60)
        add(older_t.format(**values), "keep", age_days=age, lookalike="superseded")
        add(newer_t.format(**values), "keep", age_days=rng.randint(1, age - 5), lookalike="superseded")
    for index in range(12):
        older_t, newer_t = CHAT_SUPERSEDE_TEMPLATES[index % len(CHAT_SUPERSEDE_TEMPLATES)]
        a, b = CHAT_PEOPLE[index % len(CHAT_PEOPLE)]
        what, old, new = rng.choice(DATABASES if index % 2 else LANGUAGES)
        if "on port" in older_t:  # not "export"
            old, new = str(rng.choice([8084, 8085, 3002])), str(rng.choice([9094, 9095, 4002]))
        elif "minutes" in older_t:
            old, new = str(rng.choice([5, 10, 15])), str(rng.choice([30, 45, 60]))
        elif "team lead" in older_t:
            old, new = rng.sample(PEOPLE, 2)
        elif "deploy script" in older_t:
            old, new = rng.sample(TOOLS, 2)
        values = {"a": a, "b": b, "service": next(chat_services), "what": what, "old": old, "new": new}
        age = rng.randint(40, 90)
        older = add(older_t.format(**values), "superseded", age_days=age)
        add(newer_t.format(**values), "superseding", age_days=rng.randint(1, age - 5), supersedes=older)
    for index, (older_t, newer_t) in enumerate(CHAT_SUPERSEDE_IN_CHATTER):
        a, b = CHAT_PEOPLE[-1 - index]
        values = {"a": a, "b": b, "service": next(chat_services)}
        age = rng.randint(40, 90)
        older = add(older_t.format(**values), "superseded", age_days=age)
        add(newer_t.format(**values), "superseding", age_days=rng.randint(1, age - 5), supersedes=older)
    return rows


def load() -> list[dict[str, Any]]:
    return [json.loads(line) for line in CORPUS.read_text(encoding="utf-8").splitlines() if line.strip()]


def main() -> None:
    HERE.mkdir(exist_ok=True)
    rows = build()
    texts = [row["text"] for row in rows]
    assert len(set(texts)) == len(texts), "the corpus repeats a text verbatim"
    CORPUS.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    labels: dict[str, int] = {}
    for row in rows:
        labels[row["label"]] = labels.get(row["label"], 0) + 1
    print(json.dumps({"memories": len(rows), "labels": labels}))


if __name__ == "__main__":
    main()
