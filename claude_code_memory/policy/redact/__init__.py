"""Redaction of secrets (always on) and personal data (opt-in) in free text and metadata.

``redact(text)`` finds credentials in what a memory would store and replaces each with a typed
placeholder, ``[REDACTED:<kind>]``; ``redact(text, pii=True)`` masks emails, phone numbers, card
numbers and IP addresses as well. ``redact_value`` does the same for every string inside a
metadata structure. The package is pure standard library because the capture proxy, which runs
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

The modules, one concern each:

* ``redaction.py``: ``redact`` and ``redact_value``, every detector run and the findings merged.
* ``findings.py``: the kinds, ``Finding``, ``Redaction``, the placeholder, the merge.
* ``placeholders.py``: what is not a secret (references, masks, paths, hosts, numbers); what
  looks random.
* ``names.py``: which names announce a secret; which values are names or code.
* ``scan.py``: what detectors are built from (spans, token boundaries, word lists, label scans);
  ``rules.py``: ``Rule``, a detector that is one regular expression.
* ``tokens.py`` over ``token_formats.py``: vendor tokens, webhook URLs, JWTs.
* ``aws.py``: access key ids and secret access keys.
* ``command_options.py``: passwords as command-line options (curl, mysql, docker login …).
* ``headers_and_urls.py``: authorization headers and ``scheme://user:password@host``.
* ``private_keys.py``: PEM blocks, base64-encoded PEM, service-account JSON.
* ``assignments.py``: ``password=…`` in code and configuration, ``~/.netrc``.
* ``env_files.py``: ``NAME=value`` lines of environment files.
* ``prose.py`` over ``prose_values.py`` and ``languages.py``: "the password is …" in languages
  written with spaces; ``prose_scripts.py``: in Japanese, Chinese, Korean and Russian.
* ``personal_data.py``: emails, phone numbers, card numbers, IP addresses.
"""

from __future__ import annotations

from .findings import KINDS, PII_KINDS, PLACEHOLDER, SECRET_KINDS, Finding, Redaction
from .redaction import redact, redact_value

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
