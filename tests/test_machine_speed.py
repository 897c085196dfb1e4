"""The machine's speed reference that bench_server.py and bench_ab.py record before and after a
run (bench/machine_speed.py): three medians from a process of its own, and bad input refused."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "bench"
sys.path.insert(0, str(BENCH))
import machine_speed  # noqa: E402

pytestmark = pytest.mark.integration  # starts a process (the reference runs apart)


def test_the_reference_gives_three_medians_from_a_process_of_its_own() -> None:
    figures = machine_speed.measure(rounds=5)
    assert figures["rounds"] == 5
    for key in ("embed_ms", "scan_ms", "python_ms"):
        value = figures[key]
        assert isinstance(value, float) and math.isfinite(value) and value > 0, (key, value)
    # The model really ran: a text through all-MiniLM-L6-v2 takes milliseconds; a reference
    # that skipped it (a cached text, say) would take microseconds.
    assert figures["embed_ms"] > 0.05
    load = figures["load"]
    assert isinstance(load, list) and len(load) == 3


def test_fewer_than_one_round_is_refused() -> None:
    done = subprocess.run(
        [sys.executable, str(BENCH / "machine_speed.py"), "--rounds", "0"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2
    assert "--rounds must be at least 1" in done.stderr
    assert done.stdout == ""
