"""Where the benches find the checkout, the ``ccmem`` they start and the results they keep."""

from __future__ import annotations

import sys
from pathlib import Path

#: The checkout the benches run from (``python -m bench.…`` from here).
ROOT = Path(__file__).resolve().parents[2]
#: Where the benches' JSON reports are kept, one file a run.
RESULTS = ROOT / "bench" / "results"
#: Small labelled sets kept in the repository (``bench/data/``).
DATA = ROOT / "bench" / "data"
#: The ``ccmem`` of this checkout's virtualenv, or the running interpreter's in a worktree
#: without a virtualenv of its own.
CCMEM = ROOT / ".venv" / "bin" / "ccmem"
if not CCMEM.exists():
    CCMEM = Path(sys.executable).parent / "ccmem"
