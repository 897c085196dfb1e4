"""Rate-limit tests count a few requests in one minute's window.

The limiter (``limits``' sliding-window counter) keeps windows aligned on whole minutes and
weighs the previous one by how much of it the sliding window still covers: requests that
straddle a minute's edge can be let through one past the limit (CI saw a 4th of 3 pass). A test
waits, before it counts, until the rest of its window is long enough for its requests.
"""

from __future__ import annotations

import time


def clear_of_the_minute_edge(needed: float = 15.0) -> None:
    """Return once at least ``needed`` seconds are left before the next whole minute."""
    left = 60 - time.time() % 60
    if left < needed:
        time.sleep(left + 0.5)
