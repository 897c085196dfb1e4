"""The script mitmdump loads for an installed package (no checkout): ``mitmdump -s
<site-packages>/claude_code_memory/capture_addon/mitmdump_addon.py``; ``ccmem proxy`` runs it.

The addon is this package, shipped inside ``claude_code_memory`` as ``capture_addon``. mitmdump
runs from the proxy's own virtualenv (``ccmem proxy --install``), which holds mitmproxy and
nothing of the server: the directory holding ``claude_code_memory`` is put at the *end* of
``sys.path``, so the virtualenv's own packages (mitmproxy's pinned h11, h2) always win and only
``claude_code_memory``'s standard-library modules come from there. In a checkout,
``proxy/ccmem_proxy.py`` is the script instead.
"""

import sys
from pathlib import Path

_PACKAGES = str(Path(__file__).resolve().parents[2])
if _PACKAGES not in sys.path:
    sys.path.append(_PACKAGES)

from claude_code_memory.capture_addon.addon import CaptureAddon  # noqa: E402

addons = [CaptureAddon()]
