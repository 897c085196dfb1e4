"""The workers' order comes from measured durations (tests/support/durations.py)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support import durations, parallel

JUNIT = """<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest">
<testcase classname="tests.test_fast" name="test_a" time="0.5"/>
<testcase classname="tests.test_slow" name="test_b" time="12.0"/>
<testcase classname="tests.test_slow" name="test_c[x]" time="3.5"/>
<testcase classname="tests.e2e.test_deep.TestGroup" name="test_d" time="2.0"/>
<testcase classname="conftest" name="not_a_test_file" time="99"/>
</testsuite></testsuites>
"""


def test_a_report_sums_to_seconds_per_file_longest_first(tmp_path: Path) -> None:
    report = tmp_path / "junit.xml"
    report.write_text(JUNIT, encoding="utf-8")
    measured = durations.per_file(report)
    assert measured == {"test_fast.py": 0.5, "test_slow.py": 15.5, "test_deep.py": 2.0}
    assert durations.longest_first(measured) == ["test_slow.py", "test_deep.py", "test_fast.py"]


def test_the_kept_file_loads_and_a_broken_one_orders_nothing(tmp_path: Path) -> None:
    kept = tmp_path / "durations.json"
    kept.write_text(json.dumps({"test_b.py": 3, "test_a.py": 9.5}), encoding="utf-8")
    assert durations.longest_first(durations.load(kept)) == ["test_a.py", "test_b.py"]
    kept.write_text("[not a mapping", encoding="utf-8")
    assert durations.load(kept) == {}
    assert durations.load(tmp_path / "missing.json") == {}


def test_the_workers_take_the_measured_order() -> None:
    assert tuple(durations.longest_first(durations.load())) == parallel.LONGEST_FIRST
    # The kept measurements name this suite's files (a renamed file only loses its place).
    here = {path.name for path in Path(__file__).parent.rglob("test_*.py")}
    assert len(parallel.LONGEST_FIRST) > 50 and set(parallel.LONGEST_FIRST[:20]) <= here
