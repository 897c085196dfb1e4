"""A small temporal retrieval set of our own phrasing, in LoCoMo's JSON layout (so that
``bench/quality/locomo.py --data tests/corpora/temporal/conversations.json`` runs it).

Two invented conversations of dated sessions. Every question asks about a time relative to the
conversation's last session ("yesterday", "two months ago", "in the summer", "around her
birthday", "after the move", "first", "most recently"), and each has look-alikes: the same kind
of event at another time, which only the time tells apart. Nothing here comes from LoCoMo.
``python tests/corpora/temporal_corpus.py`` rewrites ``temporal/conversations.json``.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent / "temporal"
CORPUS = HERE / "conversations.json"

# (session start, [(speaker, text)]), oldest first. The last session is the reference time.
NADIA: list[tuple[str, list[tuple[str, str]]]] = [
    (
        "2023-06-10 10:00",
        [
            ("Nadia", "We drove up to the lake cabin and went kayaking all weekend."),
            ("Tom", "That sounds like a perfect trip. Was the water cold?"),
            ("Nadia", "Freezing, but worth it. I also started a Spanish evening class this week."),
            ("Tom", "I went to a folk concert in the park on Friday."),
        ],
    ),
    (
        "2023-07-22 18:30",
        [
            ("Nadia", "I spent the afternoon kayaking on the river with my cousin."),
            ("Nadia", "Then I baked banana bread for the whole family."),
            ("Tom", "I gave an interview for a cycling podcast today."),
            ("Nadia", "We also visited York for a day, the old walls are lovely."),
        ],
    ),
    (
        "2023-09-05 20:00",
        [
            ("Nadia", "I signed the lease on a flat in Leeds, we move at the end of the month."),
            ("Tom", "Big step! I ran the city half marathon on Sunday."),
            ("Nadia", "I signed up to help at the community garden too."),
        ],
    ),
    (
        "2023-10-01 12:00",
        [
            ("Nadia", "The move is finally done, boxes everywhere in the new flat."),
            ("Nadia", "I baked cookies for the neighbours to say hello."),
            ("Tom", "I fixed the leaking sink in my bathroom this weekend."),
        ],
    ),
    (
        "2023-11-14 19:00",
        [
            ("Nadia", "I started a pottery class on Tuesday evenings, my first vase is wonky."),
            ("Tom", "I painted a small watercolour of the harbour."),
        ],
    ),
    (
        "2023-12-28 21:00",
        [
            ("Nadia", "For my birthday my sister took me to a jazz concert at the old theatre."),
            ("Tom", "Happy birthday! How old are you now?"),
            ("Nadia", "Thirty-one, and feeling it."),
        ],
    ),
    (
        "2024-01-20 09:00",
        [
            ("Nadia", "I went skiing in Chamonix with my colleagues, first time on skis."),
            ("Tom", "Did you fall much?"),
            ("Nadia", "Constantly. I bought new skis anyway."),
        ],
    ),
    (
        "2024-02-17 13:00",
        [
            ("Nadia", "I ran a 10k race through the park this morning."),
            ("Tom", "Well done! I went to a rock gig last night."),
        ],
    ),
    (
        "2024-02-28 19:30",
        [
            ("Nadia", "I bought a second-hand sewing machine from a neighbour."),
            ("Tom", "Are you going to make your own clothes?"),
        ],
    ),
    (
        "2024-03-06 17:00",
        [
            ("Nadia", "I had a job interview at a small design studio today."),
            ("Nadia", "On Sunday I went kayaking on the canal, it was icy."),
        ],
    ),
    (
        "2024-03-12 18:00",
        [
            ("Nadia", "I baked a lemon cake for the office, it vanished in minutes."),
            ("Tom", "Save me a slice next time."),
        ],
    ),
    (
        "2024-03-17 16:00",
        [
            ("Nadia", "I went to the flea market and bought an old record player."),
            ("Tom", "Vinyl sounds so warm."),
        ],
    ),
    (
        "2024-03-18 20:00",
        [
            ("Tom", "I fixed the brakes on my bike this evening."),
        ],
    ),
    (
        "2024-03-19 20:00",
        [
            ("Nadia", "I repainted the kitchen walls green today."),
            ("Tom", "Bold colour choice!"),
        ],
    ),
    (
        "2024-03-20 08:00",
        [
            ("Tom", "How is your week going?"),
            ("Nadia", "Busy, and I have a dentist appointment tomorrow."),
        ],
    ),
]

OMAR: list[tuple[str, list[tuple[str, str]]]] = [
    (
        "2024-08-10 20:00",
        [
            ("Omar", "I have been playing chess online every night."),
            ("Lena", "I am reading a book about medieval castles."),
        ],
    ),
    (
        "2024-09-15 19:00",
        [
            ("Omar", "I got an offer from a fintech startup, I think I will take the job."),
            ("Lena", "Congratulations! When do you start?"),
        ],
    ),
    (
        "2024-11-03 18:00",
        [
            ("Omar", "I started learning the guitar with online lessons."),
            ("Lena", "I went climbing at the bouldering gym with my brother."),
        ],
    ),
    (
        "2025-01-12 17:00",
        [
            ("Omar", "The new job is stressful, lots of on-call weeks."),
            ("Lena", "I planted nothing yet, the garden is frozen."),
        ],
    ),
    (
        "2025-02-03 10:00",
        [
            ("Omar", "My knee surgery went fine this morning."),
            ("Lena", "Rest well and keep the leg up."),
        ],
    ),
    (
        "2025-02-20 18:00",
        [
            ("Omar", "I started physiotherapy twice a week for the knee."),
            ("Lena", "I fixed the wobbly chair in the hallway."),
        ],
    ),
    (
        "2025-03-14 19:00",
        [
            ("Omar", "Work sent me to Oslo for a conference."),
            ("Lena", "I finished a huge jigsaw puzzle of a lighthouse."),
            ("Omar", "I fixed my bike's chain before the trip."),
        ],
    ),
    (
        "2025-04-08 20:00",
        [
            ("Lena", "I am reading Middlemarch, slowly but happily."),
            ("Lena", "I planted tomato seeds in the garden."),
        ],
    ),
    (
        "2025-05-10 22:00",
        [
            ("Lena", "The wedding was beautiful, we danced until midnight."),
            ("Omar", "You two looked so happy."),
        ],
    ),
    (
        "2025-05-20 18:00",
        [
            ("Lena", "We adopted a kitten and named her Pepper."),
            ("Omar", "Send pictures!"),
        ],
    ),
    (
        "2025-06-11 21:00",
        [
            ("Omar", "We deployed the new search service at work."),
            ("Omar", "I played football with my team on Saturday."),
        ],
    ),
    (
        "2025-07-07 19:00",
        [
            ("Lena", "Our team adopted a new code review rule."),
            ("Lena", "I am reading a thriller on the train."),
        ],
    ),
    (
        "2025-07-19 12:00",
        [
            ("Omar", "Back from a week in Lisbon, the custard tarts were worth the trip."),
        ],
    ),
    (
        "2025-07-30 20:00",
        [
            ("Omar", "I fixed the memory leak in the importer, finally."),
        ],
    ),
    (
        "2025-08-06 19:00",
        [
            ("Lena", "The tomatoes in my garden are finally ripe."),
        ],
    ),
    (
        "2025-08-09 17:00",
        [
            ("Lena", "I went to the climbing gym this afternoon and did my first overhang."),
        ],
    ),
    (
        "2025-08-12 21:00",
        [
            ("Lena", "I finished the draft of my thesis tonight."),
        ],
    ),
    (
        "2025-08-13 22:00",
        [
            ("Omar", "We deployed the new billing service today."),
        ],
    ),
    (
        "2025-08-14 09:00",
        [
            ("Lena", "Coffee before anything else this morning."),
            ("Omar", "Same here."),
        ],
    ),
]

# (question, answer, [(session number, turn number)], what it tests)
NADIA_QUESTIONS: list[tuple[str, str, list[tuple[int, int]], str]] = [
    ("What did Nadia paint yesterday?", "the kitchen walls", [(14, 1)], "yesterday"),
    ("What did Nadia bake last week?", "a lemon cake", [(11, 1)], "last week"),
    ("Which concert did Nadia go to around her birthday?", "a jazz concert", [(6, 1)], "event: around"),
    ("Where did Nadia go kayaking in the summer?", "the lake and the river", [(1, 1), (2, 1)], "season"),
    ("What race did Nadia run about a month ago?", "a 10k", [(8, 1)], "N months ago"),
    ("What did Nadia do with her colleagues two months ago?", "skiing", [(7, 1)], "N months ago"),
    ("What did Nadia sign before the move?", "the lease", [(3, 1)], "event: before"),
    ("What class did Nadia start after the move?", "pottery", [(5, 1)], "event: after"),
    ("What did Nadia buy last weekend?", "a record player", [(12, 1)], "last weekend"),
    ("What interview did Nadia have recently?", "a job interview", [(10, 1)], "recently"),
    ("Where did Nadia go on her first trip?", "the lake cabin", [(1, 1)], "order: first"),
    ("What did Nadia bake most recently?", "a lemon cake", [(11, 1)], "order: latest"),
    ("What did Tom fix the day before yesterday?", "his bike brakes", [(13, 1)], "day before yesterday"),
    ("Where did Nadia go in the winter?", "skiing in Chamonix", [(7, 1)], "season"),
    ("What did Nadia buy three weeks ago?", "a sewing machine", [(9, 1)], "N weeks ago"),
]
OMAR_QUESTIONS: list[tuple[str, str, list[tuple[int, int]], str]] = [
    ("What did Omar deploy yesterday?", "the billing service", [(18, 1)], "yesterday"),
    ("What did Lena adopt around the wedding?", "a kitten", [(10, 1)], "event: around"),
    ("Where did Omar travel last month?", "Lisbon", [(13, 1)], "last month"),
    ("What was Lena reading in the spring?", "Middlemarch", [(8, 1)], "season"),
    ("What did Omar start after his surgery?", "physiotherapy", [(6, 1)], "event: after"),
    ("What game was Omar playing a year ago?", "chess", [(1, 1)], "N years ago"),
    ("What did Lena finish this week?", "her thesis draft", [(17, 1)], "this week"),
    (
        "What did Omar first say about his new job?",
        "an offer from a fintech startup",
        [(2, 1)],
        "order: first",
    ),
    (
        "What did Lena say about her garden most recently?",
        "the tomatoes are ripe",
        [(15, 1)],
        "order: latest",
    ),
    ("What did Omar fix a couple of weeks ago?", "the memory leak", [(14, 1)], "N weeks ago"),
    ("What did Lena do last Saturday?", "the climbing gym", [(16, 1)], "last weekday"),
    ("Where did Omar go for work in March?", "Oslo", [(7, 1)], "explicit month (control)"),
]


def _session_date(raw: str) -> str:
    """LoCoMo's date form: ``1:56 pm on 8 May, 2023``."""
    moment = datetime.strptime(raw, "%Y-%m-%d %H:%M")
    return moment.strftime("%-I:%M %p on %-d %B, %Y").replace("AM", "am").replace("PM", "pm")


def conversation(
    sample_id: str,
    speakers: tuple[str, str],
    sessions: list[tuple[str, list[tuple[str, str]]]],
    questions: list[tuple[str, str, list[tuple[int, int]], str]],
) -> dict[str, Any]:
    body: dict[str, Any] = {"speaker_a": speakers[0], "speaker_b": speakers[1]}
    for number, (when, said) in enumerate(sessions, start=1):
        body[f"session_{number}_date_time"] = _session_date(when)
        body[f"session_{number}"] = [
            {"speaker": speaker, "dia_id": f"D{number}:{turn}", "text": text}
            for turn, (speaker, text) in enumerate(said, start=1)
        ]
    qa = [
        {
            "question": question,
            "answer": answer,
            "evidence": [f"D{s}:{t}" for s, t in evidence],
            "category": 2,
            "tests": tests,
        }
        for question, answer, evidence, tests in questions
    ]
    return {"sample_id": sample_id, "conversation": body, "qa": qa}


def build() -> list[dict[str, Any]]:
    return [
        conversation("nadia-tom", ("Nadia", "Tom"), NADIA, NADIA_QUESTIONS),
        conversation("omar-lena", ("Omar", "Lena"), OMAR, OMAR_QUESTIONS),
    ]


if __name__ == "__main__":
    HERE.mkdir(exist_ok=True)
    CORPUS.write_text(json.dumps(build(), indent=1) + "\n")
    print(f"wrote {CORPUS}")
