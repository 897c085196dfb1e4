"""A chat between a user and an assistant in LongMemEval's shape, for the roles step
(search/priors.py ``role_first``): the user's one-line fact between the assistant's long replies
that repeat its words. Each turn is (role, text); tests store them with the role in metadata."""

from __future__ import annotations

#: The assistant's reply, long and full of the question's words.
PLANT_REPLY = (
    "Congratulations on your new plants! Snake plants, peace lilies and succulents are great "
    "choices for a beginner. Water the snake plant and the succulent every two to three weeks, "
    "letting the soil dry out in between, and keep the peace lily's soil lightly moist. All "
    "three like bright, indirect light; fertilize once a month in spring and summer with a "
    "balanced houseplant fertilizer diluted to half strength, and repot when roots circle the pot."
)
#: The user's statement of the fact, then two replies around it.
PLANT_CHAT = [
    (
        "user",
        "I've been getting into houseplants lately. Last weekend I got a peace lily and a succulent "
        "at the nursery, and my sister gave me a snake plant, so I'm working out a watering routine.",
    ),
    ("assistant", PLANT_REPLY),
    ("assistant", PLANT_REPLY.replace("Congratulations", "Great news")),
]
#: A question about the user (their statement answers it) and one about what the assistant said.
ABOUT_THE_USER = "How many plants did I get at the nursery and from my sister?"
ABOUT_THE_REPLY = "What did you recommend for watering my new plants?"
