"""Fault check: ``kill -9`` during an ingest, delete, forget or purge of 150 memories. Prints JSON.

    .venv/bin/python -m bench.faults.kill9 [--rounds 20] [--seed 0]

A real server (``ccmem serve`` on 127.0.0.1, a temporary data directory, stopped by its PID).
Each round picks one operation at random, runs it in a thread, SIGKILLs the server at a random
moment within the operation's expected duration, starts it again, waits for the start-up
reconciliation (``/health``) to finish, and reads the stopped server's data directory:
``half_deleted`` counts rows active, paused or archived without their vector, ``orphans``
points without a live row, ``acknowledged_lost`` acknowledged writes that are gone (and
acknowledged deletes that are not); all three must be 0. ``repaired`` sums what the
reconciliations repaired, ``killed_before_the_answer`` the rounds killed mid-operation.
The harness is tests/support/kill9.py; tests/test_fault_kill9.py runs one round per operation.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from tests.support.kill9 import Kill9


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0, help="the random choices (operation, kill moment)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="ccmem-kill9-") as tmp, Kill9(Path(tmp), args.seed) as fault:
        summary = fault.run(args.rounds)
    print(json.dumps(summary, indent=2))
    if summary["half_deleted"] or summary["orphans"] or summary["acknowledged_lost"]:
        sys.exit(1)


if __name__ == "__main__":
    main()
