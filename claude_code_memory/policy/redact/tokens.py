"""Tokens that announce themselves by their shape: a vendor's prefix and length (Anthropic,
OpenAI, GitHub, Slack, Stripe, Google, SendGrid and the table in ``token_formats.py``), a
webhook URL, a JWT. One regular expression a rule.
"""

from __future__ import annotations

import re

from .placeholders import looks_random
from .rules import Rule
from .scan import WORD_DASH
from .token_formats import VENDOR_TOKENS, WEBHOOK_URLS

TOKEN_RULES: tuple[Rule, ...] = (
    Rule(
        "anthropic_api_key",
        re.compile(r"sk-ant-[a-z]{2,12}\d{2}-[A-Za-z0-9_-]{20,400}(?![\w-])"),
        not_after=WORD_DASH,
    ),
    Rule(
        "openai_api_key",
        re.compile(
            r"sk-(?!ant-)(?:(?:proj|svcacct|admin|None)-[A-Za-z0-9_-]{20,400}|[A-Za-z0-9]{32,200})(?![\w-])"
        ),
        looks_random,
        WORD_DASH,
    ),
    Rule(
        "github_token",
        re.compile(r"(?:gh[pousr]_[A-Za-z0-9]{36,251}|github_pat_[A-Za-z0-9_]{22,255})(?![\w-])"),
        not_after=WORD_DASH,
    ),
    Rule(
        "slack_webhook",
        re.compile(r"hooks\.slack\.com/(?:services|workflows|triggers)/(?P<s>[A-Za-z0-9_/-]{16,200})"),
        looks_random,
    ),
    Rule(
        "slack_token",
        re.compile(r"x(?:ox[abposr]|oxe\.xox[bp]|oxe|app)-[A-Za-z0-9-]{10,250}(?![\w-])"),
        looks_random,
        WORD_DASH,
    ),
    Rule(
        "stripe_key",  # sk_live_, rk_live_, pk_test_ …, scanned from the "k_" (a literal scans faster)
        re.compile(r"k_(?:live|test)_[A-Za-z0-9]{10,247}(?![\w-])"),
        lambda value: looks_random(value[8:]),
        WORD_DASH,
        lead="srp",
    ),
    Rule("stripe_key", re.compile(r"whsec_[A-Za-z0-9]{24,128}(?![\w-])"), looks_random, WORD_DASH),
    Rule("google_api_key", re.compile(r"AIza[0-9A-Za-z_-]{35}(?![\w-])"), not_after=WORD_DASH),
    Rule(
        "sendgrid_api_key",
        re.compile(r"SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}(?![\w-])"),
        not_after=WORD_DASH,
    ),
    *(Rule(kind, re.compile(pattern + r"(?![\w-])"), not_after=WORD_DASH) for kind, pattern in VENDOR_TOKENS),
    *(Rule(kind, re.compile(pattern)) for kind, pattern in WEBHOOK_URLS),
    Rule(
        "jwt",
        re.compile(r"eyJ[A-Za-z0-9_-]{8,4096}\.[A-Za-z0-9_-]{8,8192}\.[A-Za-z0-9_-]{8,4096}(?![\w-])"),
        not_after=WORD_DASH,
    ),
)
