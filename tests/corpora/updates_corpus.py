"""A small set of stated updates of our own phrasing, in LoCoMo's JSON layout (so that
``python -m bench.quality.locomo --data tests/corpora/updates/conversations.json`` runs it).

Two invented conversations of dated sessions. A speaker states a fact (where she works, how
often he runs, what she drives), and sessions later states what replaced it, in other words.
Category 4 questions ask how things stand, in the present tense and mostly without "now"
("Where does Priya work?"): their evidence is the newer statement only. Category 2 questions
ask for the old state ("Where did Priya work before?", "What did Leo use to drive?"): their
evidence is the older one, so a step that always put the newer first would fail them. Nothing
here comes from LoCoMo or LongMemEval; written for this project, under its licence.
``python tests/corpora/updates_corpus.py`` rewrites ``updates/conversations.json``.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent / "updates"
CORPUS = HERE / "conversations.json"

# (session start, [(speaker, text)]), oldest first. Statements that a question's evidence names
# are keyed in QUESTIONS by (conversation, session number, turn number), both from 1.
PRIYA: list[tuple[str, list[tuple[str, str]]]] = [
    (
        "2023-01-14 10:00",
        [
            ("Priya", "I work as a nurse at St Mary's hospital, mostly night shifts on the cardiac ward."),
            ("Sam", "Night shifts sound rough. How do you sleep?"),
            ("Priya", "Blackout curtains. I drive an old red Fiat Panda to work, it never lets me down."),
            ("Sam", "Classic car for city parking."),
            ("Priya", "I have two cats, Miso and Tofu, they sleep on my feet all day."),
        ],
    ),
    (
        "2023-02-25 18:00",
        [
            ("Sam", "I tried the new ramen place on Elm Street, the broth was amazing."),
            ("Priya", "I live in a tiny flat in Camden with my sister, the rent is brutal."),
            ("Sam", "Camden is fun though, lots of markets."),
            ("Priya", "I go climbing at the bouldering gym twice a week after work."),
        ],
    ),
    (
        "2023-04-08 11:30",
        [
            ("Priya", "My 10k personal best is 58 minutes, set at the spring race in the park."),
            ("Sam", "Under an hour is great for a first year of running."),
            ("Priya", "I'm learning Spanish on an app, about ten minutes every morning."),
            ("Sam", "I should pick up a language too."),
        ],
    ),
    (
        "2023-06-17 15:00",
        [
            ("Sam", "We finally repainted the kitchen, it's pale green now."),
            ("Priya", "Sounds lovely. The cats hated the hot spell this week."),
            ("Sam", "Mine too, the dog just lies on the tiles."),
        ],
    ),
    (
        "2023-08-26 09:00",
        [
            ("Priya", "Big change: I left the hospital, I work at a design studio as a junior illustrator."),
            ("Sam", "Wow, from nursing to illustration! How does it feel?"),
            ("Priya", "Scary and great. I adopted a third cat, a grey kitten called Udon: that's three."),
            ("Sam", "Three cats! Miso and Tofu must be jealous."),
        ],
    ),
    (
        "2023-10-07 19:30",
        [
            ("Priya", "I sold the Panda and bought a secondhand blue electric Renault Zoe for the commute."),
            ("Sam", "An electric car, nice. Where do you charge it?"),
            ("Priya", "At the studio. I moved out of Camden: I rent a house in Walthamstow with my partner."),
            ("Sam", "Walthamstow has a great market too."),
        ],
    ),
    (
        "2023-12-02 12:00",
        [
            ("Priya", "I smashed my 10k personal best at the winter race: 52 minutes!"),
            ("Sam", "Six minutes faster, incredible training."),
            ("Priya", "With the new job I only manage bouldering once a week, on Saturdays."),
            ("Sam", "Once a week still keeps the skills up."),
        ],
    ),
]

LEO: list[tuple[str, list[tuple[str, str]]]] = [
    (
        "2023-03-04 09:00",
        [
            ("Leo", "I drive a grey Volvo estate, it fits the whole band's gear."),
            ("Mara", "The band is still going? What do you play?"),
            ("Leo", "Bass guitar in a jazz trio, we play at the Blue Lantern bar every Friday."),
            ("Mara", "I'll come one Friday."),
            ("Leo", "I run three times a week, about five kilometres each time."),
        ],
    ),
    (
        "2023-05-13 14:00",
        [
            ("Mara", "My garden is full of tomatoes this year."),
            ("Leo", "I'm vegetarian these days, so send some over. I still eat fish though."),
            ("Mara", "Deal. I'll bring a basket."),
            ("Leo", "I teach maths at Greenfield secondary school, exam season is killing me."),
        ],
    ),
    (
        "2023-07-22 17:00",
        [
            ("Mara", "We went to the coast for a week, the kids loved the rock pools."),
            ("Leo", "I've been reading a lot of science fiction on the train."),
            ("Mara", "Any favourites?"),
            ("Leo", "Le Guin mostly. My phone is an old iPhone 8 with a cracked screen, reading hurts."),
        ],
    ),
    (
        "2023-09-30 10:00",
        [
            ("Leo", "I sold the Volvo; I ride a cargo bike everywhere and carry the bass in a trailer."),
            ("Mara", "A cargo bike with a bass in a trailer, that's a sight."),
            ("Leo", "I gave up fish as well, I'm fully vegan now."),
            ("Mara", "Then no anchovies on your pizza next time."),
        ],
    ),
    (
        "2023-11-18 16:00",
        [
            ("Leo", "I switched band: I play bass in a funk quartet, we gig at the Copper Kettle Saturdays."),
            ("Mara", "Funk suits you better than jazz, honestly."),
            ("Leo", "I upgraded my phone too, a Pixel 8 finally, the cracked iPhone is retired."),
            ("Mara", "About time."),
        ],
    ),
    (
        "2024-01-20 08:30",
        [
            ("Leo", "I run every weekday morning now, ten kilometres before school."),
            ("Mara", "Training for something?"),
            ("Leo", "The spring marathon. Also I moved schools: I teach physics at Riverside college."),
            ("Mara", "Physics at a college, congratulations!"),
        ],
    ),
]

CONVERSATIONS = [("updates-priya", "Priya", "Sam", PRIYA), ("updates-leo", "Leo", "Mara", LEO)]

# (conversation, question, answer, [(session, turn)], category): 4 asks how things stand (the
# newer statement), 2 asks for the old state (the older one).
QUESTIONS: list[tuple[str, str, str, list[tuple[int, int]], int]] = [
    ("updates-priya", "Where does Priya work?", "a design studio", [(5, 1)], 4),
    ("updates-priya", "What is Priya's job?", "junior illustrator", [(5, 1)], 4),
    ("updates-priya", "What car does Priya drive?", "a blue Renault Zoe", [(6, 1)], 4),
    ("updates-priya", "How many cats does Priya have?", "three", [(5, 3)], 4),
    ("updates-priya", "Where does Priya live?", "Walthamstow", [(6, 3)], 4),
    ("updates-priya", "What is Priya's 10k personal best?", "52 minutes", [(7, 1)], 4),
    ("updates-priya", "How often does Priya go bouldering?", "once a week", [(7, 3)], 4),
    ("updates-priya", "Where did Priya work before she changed jobs?", "St Mary's hospital", [(1, 1)], 2),
    ("updates-priya", "What car did Priya use to drive?", "a red Fiat Panda", [(1, 3)], 2),
    ("updates-leo", "What does Leo drive?", "a cargo bike", [(4, 1)], 4),
    ("updates-leo", "Which band does Leo play bass in?", "a funk quartet", [(5, 1)], 4),
    ("updates-leo", "Where does Leo's band play?", "the Copper Kettle", [(5, 1)], 4),
    ("updates-leo", "How often does Leo run?", "every weekday", [(6, 1)], 4),
    ("updates-leo", "What does Leo teach?", "physics", [(6, 3)], 4),
    ("updates-leo", "Does Leo eat fish?", "no, he is vegan", [(4, 3)], 4),
    ("updates-leo", "What phone does Leo have at the moment?", "a Pixel 8", [(5, 3)], 4),
    ("updates-leo", "Which school did Leo teach at previously?", "Greenfield secondary", [(2, 4)], 2),
    ("updates-leo", "What did Leo use to play in the jazz trio?", "bass guitar", [(1, 3)], 2),
]


def _when(raw: str) -> str:
    """LoCoMo's session date format ("1:56 pm on 8 May, 2023")."""
    moment = datetime.strptime(raw, "%Y-%m-%d %H:%M")
    return moment.strftime("%-I:%M %p on %-d %B, %Y").replace("AM", "am").replace("PM", "pm")


def build() -> list[dict[str, Any]]:
    out = []
    for sample_id, speaker_a, speaker_b, sessions in CONVERSATIONS:
        body: dict[str, Any] = {"speaker_a": speaker_a, "speaker_b": speaker_b}
        for number, (start, turns) in enumerate(sessions, 1):
            body[f"session_{number}_date_time"] = _when(start)
            body[f"session_{number}"] = [
                {"speaker": who, "dia_id": f"D{number}:{position}", "text": text}
                for position, (who, text) in enumerate(turns, 1)
            ]
        qa = [
            {
                "question": question,
                "answer": answer,
                "evidence": [f"D{s}:{t}" for s, t in evidence],
                "category": category,
            }
            for conversation, question, answer, evidence, category in QUESTIONS
            if conversation == sample_id
        ]
        out.append({"sample_id": sample_id, "conversation": body, "qa": qa})
    return out


if __name__ == "__main__":
    HERE.mkdir(exist_ok=True)
    CORPUS.write_text(json.dumps(build(), indent=1) + "\n")
