"""The suite's measured time per test file, which the workers take longest first.

``tests/durations.json`` maps a test file's name to the seconds its tests took in a run
(summed from that run's junit.xml, setup and teardown included, as pytest reports them).
Regenerate it from a full run's report::

    .venv/bin/python -m pytest --junitxml=test-artifacts/junit.xml
    .venv/bin/python -m tests.support.durations test-artifacts/junit.xml

Only an ordering hint: a file missing from it runs after the measured ones, in pytest's order,
and a stale entry costs time, never a test.
"""

from __future__ import annotations

import argparse
import json
import xml.etree.ElementTree as ElementTree
from collections import defaultdict
from pathlib import Path

FILE = Path(__file__).resolve().parents[1] / "durations.json"


def per_file(junit_xml: Path) -> dict[str, float]:
    """Seconds per test file (its name), summed over the report's test cases."""
    totals: dict[str, float] = defaultdict(float)
    for case in ElementTree.parse(junit_xml).getroot().iter("testcase"):
        module = case.get("classname", "").split(".")
        name = next((f"{part}.py" for part in module if part.startswith("test_")), None)
        if name is not None:
            totals[name] += float(case.get("time") or 0)
    return dict(totals)


def load(path: Path = FILE) -> dict[str, float]:
    """The kept durations; empty when there are none (every file then keeps pytest's order)."""
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {str(name): float(seconds) for name, seconds in raw.items()} if isinstance(raw, dict) else {}


def longest_first(durations: dict[str, float]) -> list[str]:
    """File names, longest first (ties by name, so the order is the same on every machine)."""
    return sorted(durations, key=lambda name: (-durations[name], name))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("junit_xml", type=Path, help="a full run's --junitxml report")
    args = parser.parse_args()
    measured = per_file(args.junit_xml)
    FILE.write_text(
        json.dumps({name: round(measured[name], 1) for name in longest_first(measured)}, indent=1) + "\n",
        encoding="utf-8",
    )
    print(f"{len(measured)} files, {sum(measured.values()):.0f} s in all: {FILE}")


if __name__ == "__main__":
    main()
