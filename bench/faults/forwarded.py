"""Fault check: can a client choose the address it is counted under? Prints JSON.

    .venv/bin/python -m bench.faults.forwarded [--tries 10]

Starts the real server (``ccmem serve``, OAuth on, this machine's requests counted, the default
``server.trusted_proxies: []``) and, from loopback, sends every request with a different
forwarded address (``X-Forwarded-For`` in several spellings, ``Forwarded``, ``X-Real-IP``):
wrong tokens on the consent page past its sign-in throttle, then the right one; requests past
the per-address rate limit; registrations past the per-address cap of unused clients.

Must be 0: ``wrong_tokens_judged_after_throttle`` (a wrong token answered 401 rather than 429
once the throttle is on), ``codes_after_throttle`` (the right token got a code while
throttled), ``requests_past_rate_limit`` (answered without 429 past the per-address limit),
``registrations_past_cap``.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

import httpx

from bench.harness.scratch_server import scratch_server

ROOT = Path(__file__).resolve().parents[2]  # the repository


LOGIN_FAILURES = 3
PER_ADDRESS = 40
REGISTRATION_CAP = 5
REDIRECT = "http://127.0.0.1:9/cb"


def spoofed(n: int) -> dict[str, str]:
    """The nth forwarded-address header set: each claims a different client."""
    shapes = [
        {"X-Forwarded-For": f"203.0.113.{n % 250 + 1}"},
        {"X-Forwarded-For": f"198.51.100.{n % 250 + 1}, 127.0.0.1"},
        {"X-Forwarded-For": f"[2001:db8::{n + 1:x}]:443"},
        {"Forwarded": f"for=192.0.2.{n % 250 + 1}"},
        {"X-Real-IP": f"192.0.2.{n % 250 + 1}"},
    ]
    return shapes[n % len(shapes)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tries", type=int, default=10)
    args = parser.parse_args()
    settings = {
        "CCMEM_AUTH__OAUTH__ENABLED": "true",
        "CCMEM_SERVER__RATE_LIMIT__LOOPBACK": "true",
        "CCMEM_SERVER__RATE_LIMIT__PER_ADDRESS": f"{PER_ADDRESS}/minute",
        "CCMEM_SERVER__RATE_LIMIT__LOGIN_FAILURES": f"{LOGIN_FAILURES}/15 minutes",
        "CCMEM_AUTH__OAUTH__REGISTRATION__MAX_UNUSED_CLIENTS_PER_ADDRESS": str(REGISTRATION_CAP),
    }
    report: dict[str, object] = {}
    with scratch_server("ccmem-fault-xff-", "fault-xff", settings) as (base, token):
        client_id = httpx.post(f"{base}/register", json={"redirect_uris": [REDIRECT]}, timeout=30).json()[
            "client_id"
        ]
        params = {
            "response_type": "code",
            "client_id": client_id,
            "redirect_uri": REDIRECT,
            "code_challenge": "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM",
            "state": "s",
        }
        page = httpx.get(f"{base}/authorize", params=params, follow_redirects=True, timeout=30)
        found = re.search(r'name="request" value="([^"]+)"', page.text)
        assert found, page.text
        answers = []
        for n in range(LOGIN_FAILURES + args.tries):
            form = {"request": found.group(1), "token": "ccm_wrong", "decision": "allow"}
            answers.append(
                httpx.post(f"{base}/oauth/consent", data=form, headers=spoofed(n), timeout=30).status_code
            )
        right = httpx.post(
            f"{base}/oauth/consent",
            data={"request": found.group(1), "token": token, "decision": "allow"},
            headers=spoofed(99),
            timeout=30,
        )
        report["consent_answers"] = answers + [right.status_code]
        report["wrong_tokens_judged_after_throttle"] = answers[LOGIN_FAILURES:].count(401)
        report["codes_after_throttle"] = int("code=" in right.headers.get("location", ""))

        registered = [
            httpx.post(
                f"{base}/register", json={"redirect_uris": [REDIRECT]}, headers=spoofed(n), timeout=30
            ).status_code
            for n in range(REGISTRATION_CAP + args.tries)
        ]
        report["registration_answers"] = registered
        # One client was registered above, from the same (loopback) address.
        report["registrations_past_cap"] = max(0, registered.count(201) - (REGISTRATION_CAP - 1))

        statuses = [
            httpx.get(f"{base}/health", headers=spoofed(n), timeout=30).status_code
            for n in range(PER_ADDRESS * 2)
        ]
        # Every request above counted too; the sliding window may let one past its edge.
        report["rate_limit_answers"] = {
            "429": statuses.count(429),
            "other": len(statuses) - statuses.count(429),
        }
        report["requests_past_rate_limit"] = max(0, len(statuses) - statuses.count(429) - PER_ADDRESS)
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
