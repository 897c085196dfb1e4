"""The fault suite: every check of the trust audit, one after another, as one JSON report.

    .venv/bin/python -m bench.faults.suite [--quick] [--only NAME ...]

Runs each check (a module of ``bench/faults/``) in its own process (each starts and stops its own servers on
127.0.0.1) and prints, per check, the figures that must be zero and how long it took; the
whole report of each check is under ``report``. ``--quick`` runs fewer rounds (what a
developer runs before a commit); the default is the audit's size. ``full_disk`` needs root
(it mounts a tmpfs). ``load`` is ``bench/perf/load.py`` (20 REST and MCP clients for 60 s at
10k memories): its errors and lost writes must be 0; its latencies against their targets are in
its report (``targets_met``). Exit status 1 when any figure that must be zero is not.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

from bench.harness.paths import ROOT

#: name -> (module, arguments (audit size), arguments (--quick), the figures that must be 0)
CHECKS: dict[str, tuple[str, list[str], list[str], Callable[[dict[str, Any]], dict[str, int]]]] = {
    "concurrent_writers": (
        "bench.faults.concurrent_writers",
        ["--rounds", "5"],
        ["--rounds", "1"],
        lambda r: {k: r["summary"][k] for k in ("responses_not_200", "duplicate_rows", "texts_lost")},
    ),
    "full_disk": (
        "bench.faults.full_disk",
        ["--rounds", "1"],
        ["--rounds", "1"],
        lambda r: {"crashes": r["crashes"], "writes_lost": r["writes_lost_after_restart"]},
    ),
    "kill9": (
        "bench.faults.kill9",
        ["--rounds", "20"],
        ["--rounds", "4"],
        lambda r: {k: r[k] for k in ("half_deleted", "orphans", "acknowledged_lost")},
    ),
    "fuzz": (
        "bench.faults.fuzz",
        [],
        [],
        lambda r: {"responses_500": r["responses_500"], "dropped_connections": r["dropped_connections"]},
    ),
    "nested_json": (
        "bench.faults.nested_json",
        ["--depth", "50000"],
        ["--depth", "50000"],
        lambda r: {
            k: r[k]
            for k in (
                "responses_500",
                "dropped_connections",
                "hook_answers_not_empty",
                "wrong_shape",
                "memories_changed",
            )
        },
    ),
    "secrets": (
        "bench.faults.redaction",
        ["--seeds", "100"],
        ["--seeds", "10"],
        lambda r: {
            "secret_corpus_leaks": r["secret_corpus"]["renderings_with_a_secret_left"],
            "audit_format_leaks": sum(f["stored_secret"] for f in r["audit_formats"].values()),
            "clean_false_positives": r["clean_corpus"]["false_positives"],
        },
    ),
    "erasure": (
        "bench.faults.erasure",
        ["--memories", "1000", "--batch", "100"],
        ["--memories", "200", "--batch", "20"],
        lambda r: {
            "deleted_bytes_left": sum(
                sum(r[step]["bytes_found"].values()) for step in ("delete", "forget", "purge", "after_close")
            )
        },
    ),
    "hook_state": (
        "bench.faults.hook_state",
        ["--rounds", "5", "--users", "6"],
        ["--rounds", "1", "--users", "4"],
        lambda r: {
            k: r[k] for k in ("foreign_captures", "lost_captures", "wrong_models", "state_changed_by_another")
        },
    ),
    "hook_cwd": (
        "bench.faults.hook_cwd",
        ["--probes", "20"],
        ["--probes", "3"],
        lambda r: {k: r[k] for k in ("disk_answers", "responses_not_200", "tracebacks", "long_log_lines")},
    ),
    "file_modes": (
        "bench.faults.file_modes",
        ["--memories", "20"],
        ["--memories", "3"],
        lambda r: {
            k: r[k]
            for k in (
                "readable_after_fresh_start",
                "readable_after_restart",
                "install_data_dirs_open",
                "package_paths_open",
                "widened_keys_accepted",
            )
        },
    ),
    "import_bad_rows": (
        "bench.faults.openmemory_import",
        ["--good", "200", "--bad-each", "3"],
        ["--good", "40", "--bad-each", "1"],
        lambda r: {
            k: r[k] for k in ("good_rows_lost", "bad_rows_unreported", "failed_runs", "imported_again")
        },
    ),
    "load": (
        "bench.perf.load",
        ["--memories", "10000", "--clients", "20", "--seconds", "60", "--no-out"],
        ["--memories", "1000", "--clients", "6", "--seconds", "10", "--no-out"],
        # Latency is in the report (``targets_met``), not a must-be-zero figure: it is the
        # machine's as much as the server's, and the suite runs on shared machines.
        lambda r: {"errors": r["errors"], "lost_writes": r["lost_writes"]},
    ),
}


Check = tuple[str, list[str], list[str], Callable[[dict[str, Any]], dict[str, int]]]


def claude_import_check() -> Check:
    """``ccmem import claude-code`` past lines it cannot take, pipes and links
    (bench/faults/claude_import.py)."""
    return (
        "bench.faults.claude_import",
        ["--transcripts", "12", "--bad-each", "2"],
        ["--transcripts", "3", "--bad-each", "1"],
        lambda r: {
            k: r[k]
            for k in (
                "good_turns_lost",
                "bad_lines_unreported",
                "failed_runs",
                "imported_again",
                "outside_turns_imported",
            )
        },
    )


def scopes_check() -> Check:
    """A read-only token against every route and MCP tool (bench/faults/scopes.py)."""
    return (
        "bench.faults.scopes",
        [],
        [],
        lambda r: {k: r[k] for k in ("writes_let_through", "teams_deleted", "reads_refused")},
    )


CHECKS["claude_import"] = claude_import_check()
CHECKS["invitations"] = (
    "bench.faults.invitations",
    ["--rounds", "5"],
    ["--rounds", "1"],
    lambda r: {
        k: r[k]
        for k in (
            "rejoined_after_removal",
            "codes_alive_after_issuer_removed",
            "codes_alive_after_demotion",
            "revoked_codes_accepted",
            "stale_codes_accepted",
            "non_owner_reads_or_revokes",
        )
    },
)
CHECKS["scopes"] = scopes_check()


def _oauth_registration_zeros(report: dict[str, Any]) -> dict[str, int]:
    keys = (
        "oversize_accepted",
        "bad_redirects_accepted",
        "over_cap_accepted",
        "documents_with_bad_redirects_accepted",
        "slow_documents_over_deadline",
    )
    return {key: report[key] for key in keys}


def _forwarded_headers_zeros(report: dict[str, Any]) -> dict[str, int]:
    keys = (
        "wrong_tokens_judged_after_throttle",
        "codes_after_throttle",
        "requests_past_rate_limit",
        "registrations_past_cap",
    )
    return {key: report[key] for key in keys}


CHECKS["oauth_registration"] = (
    "bench.faults.oauth_registration",
    ["--flood", "200"],
    ["--flood", "40"],
    _oauth_registration_zeros,
)
CHECKS["forwarded_headers"] = (
    "bench.faults.forwarded",
    ["--tries", "10"],
    ["--tries", "4"],
    _forwarded_headers_zeros,
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--only", nargs="*", choices=sorted(CHECKS), default=sorted(CHECKS))
    args = parser.parse_args()

    results: dict[str, Any] = {}
    for name in args.only:
        module, full, quick, zeros = CHECKS[name]
        started = time.monotonic()
        run = subprocess.run(
            [sys.executable, "-m", module, *(quick if args.quick else full)],
            cwd=ROOT,
            capture_output=True,
            text=True,
        )
        entry: dict[str, Any] = {"seconds": round(time.monotonic() - started, 1), "exit": run.returncode}
        try:
            report = json.loads(run.stdout)
            entry["must_be_zero"] = zeros(report)
            entry["report"] = report
        except (json.JSONDecodeError, KeyError, TypeError) as exc:
            entry["error"] = f"{type(exc).__name__}: {exc}; stderr: {run.stderr[-2000:]}"
        results[name] = entry
    failed = sorted(
        name
        for name, entry in results.items()
        if "error" in entry or entry["exit"] != 0 or any(entry["must_be_zero"].values())
    )
    print(json.dumps({"checks": results, "failed": failed}, indent=2))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
