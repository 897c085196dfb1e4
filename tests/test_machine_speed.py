"""The machine's speed reference that bench/perf/server.py and bench/perf/ab.py record before and
after a run (bench/harness/machine_speed.py): three medians from a process of its own, and bad input
refused."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import pytest

from bench.harness import machine_speed

ROOT = Path(__file__).resolve().parent.parent

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
        [sys.executable, "-m", "bench.harness.machine_speed", "--rounds", "0"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2
    assert "--rounds must be at least 1" in done.stderr
    assert done.stdout == ""
