"""Fault check: what the hook endpoint does with the client's ``cwd``. Prints JSON.

    .venv/bin/python -m bench.faults.hook_cwd [--probes 20]

Starts a server on 127.0.0.1 (stopped by PID at the end) on a temporary data directory. Each
probe sends one session's ``UserPromptSubmit`` and ``Stop`` from a folder inside a git repository
on the server's own disk, and another from a folder of the same name that exists nowhere; the
captured turns' projects must be the same, or the answer tells the client whether a path of the
server is a repository (``disk_answers``). Then ``cwd`` values of 100 KB and 1 MB: each must be
answered 200 (``responses_not_200``), and the server's log must hold no traceback
(``tracebacks``) and no line longer than 2,000 characters (``long_log_lines``).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Any

from tests.support.server import MemoryServer

#: What must be 0 (the module's docstring).
FIGURES = ("disk_answers", "responses_not_200", "tracebacks", "long_log_lines")
LONG_LINE = 2000
URL = "/api/v1/hooks/claude-code"


def captured_project(server: MemoryServer, token: str, cwd: str) -> Any:
    """The project the server files a turn from ``cwd`` under."""
    session = str(uuid.uuid4())
    with server.client(token) as client:
        for event in (
            {"hook_event_name": "UserPromptSubmit", "prompt": f"What lives in {cwd}?"},
            {"hook_event_name": "Stop", "last_assistant_message": f"The {session[:8]} report."},
        ):
            body = {"session_id": session, "cwd": cwd, "transcript_path": "/dev/null"} | event
            client.post(URL, json=body, timeout=60).raise_for_status()
        pending = client.get("/api/v1/consent/pending", timeout=60).json()
    return next(
        (item["project"] for item in pending["items"] if item.get("conversation_id") == session), None
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--probes", type=int, default=20)
    args = parser.parse_args()
    report: dict[str, Any] = dict.fromkeys(FIGURES, 0)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        with MemoryServer(root / "server") as server:
            for probe in range(args.probes):
                token = server.make_token(f"probe-{probe}-{uuid.uuid4().hex[:6]}")  # a short queue each
                name = f"service{probe}"
                inside = root / "repos" / name / "src"
                (root / "repos" / name / ".git").mkdir(parents=True)
                inside.mkdir()
                nowhere = root / "absent" / name / "src"
                if captured_project(server, token, str(inside)) != captured_project(
                    server, token, str(nowhere)
                ):
                    report["disk_answers"] += 1
            with server.client(token) as client:
                for size in (100_000, 1_000_000):
                    body = {
                        "hook_event_name": "UserPromptSubmit",
                        "session_id": str(uuid.uuid4()),
                        "cwd": "/" + "d" * size,
                        "transcript_path": "/dev/null",
                        "prompt": "anything to recall?",
                    }
                    if client.post(URL, json=body, timeout=60).status_code != 200:
                        report["responses_not_200"] += 1
            log = server.log_path.read_text(encoding="utf-8", errors="replace")
        report["tracebacks"] = log.count("Traceback (most recent call last)")
        report["long_log_lines"] = sum(len(line) > LONG_LINE for line in log.splitlines())
        report["probes"] = args.probes
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
