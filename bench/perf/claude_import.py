"""Import a generated Claude Code history of 1,000 sessions into a real server; print JSON.

Measures turns a second and the importer's peak RSS for an uninterrupted run, then a second
user's run killed part-way and resumed: the stored count after the resume must equal the
uninterrupted one. Run: .venv/bin/python -m bench.perf.claude_import [--sessions N]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import signal
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

import httpx

from tests.support.server import MemoryServer, ccmem_bin

TOPICS = ["cart", "tax", "deploy", "login", "search", "cache", "billing", "queue", "email", "report"]


def generate(root: Path, sessions: int, turns: int) -> int:
    total = 0
    for number in range(sessions):
        project = f"proj-{number % 20}"
        cwd = f"/home/dev/code/{project}"
        folder = root / f"-home-dev-code-{project}"
        folder.mkdir(parents=True, exist_ok=True)
        session = str(uuid.UUID(int=number + 1))
        lines = []
        for turn in range(turns):
            topic = TOPICS[(number + turn) % len(TOPICS)]
            stamp = f"2026-01-{1 + number % 28:02d}T{turn % 24:02d}:00:00Z"
            base = {"sessionId": session, "cwd": cwd, "timestamp": stamp}
            prompt = f"Session {number} turn {turn}: how does the {topic} module handle retries?"
            lines.append(json.dumps(base | {"type": "user", "message": {"role": "user", "content": prompt}}))
            tool = {
                "type": "tool_use",
                "id": f"t{turn}",
                "name": "Read",
                "input": {"file_path": f"{topic}.py"},
            }
            lines.append(
                json.dumps(
                    base
                    | {
                        "type": "assistant",
                        "message": {"id": f"a{turn}", "role": "assistant", "content": [tool]},
                    }
                )
            )
            result = {"type": "tool_result", "tool_use_id": f"t{turn}", "content": "x" * 400}
            lines.append(
                json.dumps(base | {"type": "user", "message": {"role": "user", "content": [result]}})
            )
            reply = f"In session {number}, the {topic} module retries {turn + 2} times with backoff."
            lines.append(
                json.dumps(
                    base
                    | {
                        "type": "assistant",
                        "message": {
                            "id": f"b{turn}",
                            "role": "assistant",
                            "content": [{"type": "text", "text": reply}],
                        },
                    }
                )
            )
            total += 1
        (folder / f"{session}.jsonl").write_text("\n".join(lines) + "\n")
    return total


def command(server: MemoryServer, token: str, root: Path, state: Path) -> list[str]:
    return [str(ccmem_bin()), "import", "claude-code", "--root", str(root), "--state-dir", str(state),
            "--json", "--url", server.base_url, "--token", token]  # fmt: skip


def stored(server: MemoryServer, token: str) -> int:
    answer = httpx.get(f"{server.base_url}/api/v1/consent/pending", params={"size": 1},
                       headers={"Authorization": f"Bearer {token}"}, timeout=60)  # fmt: skip
    answer.raise_for_status()
    return int(answer.json()["total"])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--turns", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch)
        root = work / "projects"
        turns = generate(root, args.sessions, args.turns)
        with MemoryServer(work / "server") as server:
            whole = server.make_token("whole")
            started = time.perf_counter()
            done = subprocess.run(
                command(server, whole, root, work / "state-whole"),
                capture_output=True,
                text=True,
                env=server.env,
            )
            elapsed = time.perf_counter() - started
            assert done.returncode == 0, done.stderr
            report = json.loads(done.stdout)
            peak_rss_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
            killed_user = server.make_token("killed")
            quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
            child = subprocess.Popen(
                command(server, killed_user, root, work / "state-killed"), env=server.env, **quiet
            )
            while stored(server, killed_user) < turns // 3:
                time.sleep(0.2)
            os.kill(child.pid, signal.SIGKILL)
            child.wait()
            at_kill = stored(server, killed_user)
            resumed = subprocess.run(
                command(server, killed_user, root, work / "state-killed"),
                capture_output=True,
                text=True,
                env=server.env,
            )
            assert resumed.returncode == 0, resumed.stderr
            result = {
                "sessions": args.sessions,
                "turns": turns,
                "imported": report["imported"],
                "seconds": round(elapsed, 1),
                "turns_per_second": round(report["imported"] / elapsed, 1),
                "importer_peak_rss_mb": round(peak_rss_mb, 1),
                "killed_at": at_kill,
                "after_resume": stored(server, killed_user),
                "uninterrupted": stored(server, whole),
                "resume_report": json.loads(resumed.stdout),
            }
            result["resume_equal"] = result["after_resume"] == result["uninterrupted"]
            result["resume_report"].pop("skipped_lines", None)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
