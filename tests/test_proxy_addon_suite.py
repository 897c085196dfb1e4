"""The capture addon's unit tests run in the proxy's own virtualenv (mitmproxy cannot be
installed beside the server's dependencies); this runs them from the main suite, so README's
one test command covers them."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.support.processes import require_tool

REPO_ROOT = Path(__file__).resolve().parent.parent
PROXY_PYTHON = REPO_ROOT / "proxy" / ".venv" / "bin" / "python"


@pytest.mark.integration
def test_addon_unit_tests_pass_in_the_proxy_virtualenv() -> None:
    python = require_tool(PROXY_PYTHON, "the capture proxy's virtualenv; run ./install.sh --dev")
    completed = subprocess.run(
        [str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"],
        cwd=REPO_ROOT / "proxy",
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    output = completed.stdout + completed.stderr
    assert completed.returncode == 0, output[-6000:]
    assert " passed" in output and " failed" not in output, output[-3000:]
