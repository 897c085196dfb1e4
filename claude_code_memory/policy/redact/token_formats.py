"""Credentials that announce themselves: a vendor's documented prefix and length, or a webhook URL.

A table, not code: ``tokens.py`` compiles each entry into a rule. A documented prefix
with the right length is a secret whatever characters follow it (an all-lowercase Hugging Face
token is as live as a mixed-case one), so these rules do not ask the value to look random; the
prefix and the exact length keep hashes, ids and identifiers out. Where the vendor's body is
hexadecimal, either case matches. Written from each vendor's own documentation of its formats.

Standard library only: the capture proxy imports this module through ``policy/redact/``.
"""

from __future__ import annotations

#: kind, then the token itself (no boundaries: the rule adds them).
VENDOR_TOKENS: tuple[tuple[str, str], ...] = (
    # Hugging Face user access tokens: hf_ and 34 letters and digits today, longer allowed
    ("huggingface_token", r"hf_[A-Za-z0-9]{34,128}"),
    # Twilio API key SIDs: SK and 32 hex digits (the key's secret is a separate 32 characters)
    ("twilio_api_key", r"SK[0-9a-fA-F]{32}"),
    # npm access tokens (granular, automation, publish): npm_ and 36 letters and digits
    ("npm_token", r"npm_[A-Za-z0-9]{36}"),
    # PyPI API tokens are macaroons: pypi- then base64 of a header that starts 0x02 0x01
    ("pypi_token", r"pypi-AgE[A-Za-z0-9_-]{50,1000}"),
    # GitLab personal, project, group, deploy, runner and trigger tokens
    ("gitlab_token", r"gl(?:pat|dt|rt|ptt|ft|soat)-[A-Za-z0-9_-]{20,64}"),
    # DigitalOcean personal access, OAuth and refresh tokens
    ("digitalocean_token", r"do[opr]_v1_[0-9a-fA-F]{64}"),
    # Shopify admin, custom app, private app and shared secrets
    ("shopify_token", r"shp(?:at|ca|pa|ss)_[0-9a-fA-F]{32}"),
    # Groq API keys
    ("groq_api_key", r"gsk_[A-Za-z0-9]{52}"),
    # Replicate API tokens
    ("replicate_token", r"r8_[A-Za-z0-9]{37}"),
    # Databricks personal access tokens, with the optional -N workspace suffix
    ("databricks_token", r"dapi[0-9a-fA-F]{32}(?:-\d{1,2})?"),
)

#: kind, then a webhook URL's host and path; the named group ``s`` is the part that grants access.
WEBHOOK_URLS: tuple[tuple[str, str], ...] = (
    # Discord: /api/webhooks/<channel id>/<token>, on discord.com, discordapp.com, ptb. and canary.
    (
        "discord_webhook",
        r"discord(?:app)?\.com/api/(?:v\d{1,2}/)?webhooks/(?P<s>\d{16,21}/[A-Za-z0-9_-]{60,100})",
    ),
    # Microsoft Teams incoming webhooks: <tenant>.webhook.office.com/webhookb2/<ids>/IncomingWebhook/…
    ("teams_webhook", r"\.webhook\.office\.com/webhookb2/(?P<s>[A-Za-z0-9@/_-]{60,400})"),
)
