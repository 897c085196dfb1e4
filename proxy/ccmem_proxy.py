"""The script mitmdump loads: ``mitmdump -s proxy/ccmem_proxy.py --set ccmem_...=...``.

``ccmem proxy`` runs it for you; the Docker image runs it directly. The addon lives in the
``ccmem_capture`` package beside this file (mitmproxy puts this directory on ``sys.path``); the
extraction and redaction it shares with the server are standard-library modules of the
``claude_code_memory`` package one directory up, found through ``PYTHONPATH`` or, failing
that, from this file's location in the repository.
"""

import sys
from pathlib import Path

try:
    import claude_code_memory.capture.anthropic  # noqa: F401
except ImportError:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from ccmem_capture.addon import CaptureAddon  # noqa: E402

addons = [CaptureAddon()]
