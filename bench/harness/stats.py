"""How the benches summarise what they timed: percentiles, and the machine's load beside them."""

from __future__ import annotations

import os
import statistics

#: Searches before each measured round (not counted).
WARMUP = 5


def percentiles(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "p50_ms": round(statistics.median(ordered) * 1000, 2),
        "p95_ms": round(ordered[max(0, int(len(ordered) * 0.95) - 1)] * 1000, 2),
        "n": len(ordered),
    }


def load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]
