"""Fault check: Claude Code transcripts with lines the import cannot take, imported twice. Prints JSON.

    .venv/bin/python -m bench.faults.claude_import [--transcripts 6] [--bad-each 1]

Builds a projects folder of ``--transcripts`` transcripts, each with good turns and, between
them, ``--bad-each`` lines of each kind the audit found stopping ``ccmem import claude-code`` for
good: a line nested 5,000 deep, a prompt holding a lone surrogate (half an emoji), a 3.6 MB
pasted prompt (over the server's body cap: 413), a line that is not JSON. Beside them: a pipe
named ``*.jsonl`` (it hung the run), a link to a transcript outside the folder and a link to a
folder outside it (both followed and imported). Starts a server on 127.0.0.1 (stopped by PID at
the end) and runs the import twice, each with a time limit.

``good_turns_lost`` (good turns not in the consent queue after the first run),
``bad_lines_unreported`` (bad lines and refused files not named among the skipped),
``failed_runs`` (a run that exited non-zero or ran out of time), ``imported_again`` (turns the
second run imported) and ``outside_turns_imported`` (turns from behind a link) must be 0.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import tempfile
import uuid
from pathlib import Path
from typing import Any

import httpx

from tests.support.server import MemoryServer

#: Each kind of line the audit found stopping the import, as a function of the line's marker.
BAD_LINES = {
    "nested": lambda marker, line: "[" * 5000 + "]" * 5000,
    "lone_surrogate": lambda marker, line: line("user", f"half an emoji \ud83d in {marker}"),
    "too_large": lambda marker, line: line("user", f"pasted {marker} " + "lorem ipsum " * 300_000),
    "not_json": lambda marker, line: "{broken " + marker,
}


def transcript(path: Path, session: str, cwd: Path, good: list[str], bad: list[str]) -> list[int]:
    """Write a transcript: a good turn, then each bad line followed by a good turn. The
    1-based numbers of the bad lines."""

    def line(kind: str, text: str) -> str:
        message = {"role": kind, "content": [{"type": "text", "text": text}], "id": uuid.uuid4().hex}
        entry = {"type": kind, "sessionId": session, "cwd": str(cwd), "message": message}
        return json.dumps(entry | {"timestamp": "2026-02-03T04:05:06Z"})

    lines: list[str] = []
    numbers: list[int] = []
    markers = iter(good)
    for kind in [None, *bad]:
        if kind is not None:
            marker = uuid.uuid4().hex[:8]
            lines.append(BAD_LINES[kind](marker, line))
            numbers.append(len(lines))
            if kind in ("lone_surrogate", "too_large"):
                lines.append(line("assistant", f"a reply to the bad prompt {marker}"))
        marker = next(markers)
        lines.append(line("user", f"What is the code word {marker}?"))
        lines.append(line("assistant", f"The code word is {marker}."))
    path.write_text("\n".join(lines) + "\n")
    return numbers


def queued(server: MemoryServer, token: str) -> str:
    """Every text in the user's consent queue, joined."""
    texts: list[str] = []
    page = 1
    while True:
        answer = httpx.get(
            f"{server.base_url}/api/v1/consent/pending",
            params={"page": page, "size": 100},
            headers={"Authorization": f"Bearer {token}"},
            timeout=60,
        )
        answer.raise_for_status()
        items = answer.json()["items"]
        texts += [str(item.get("text") or item.get("content") or "") for item in items]
        if len(items) < 100:
            return "\n".join(texts)
        page += 1


def run(server: MemoryServer, token: str, root: Path, state: Path) -> tuple[dict[str, Any] | None, int]:
    try:
        done = server.ccmem(
            "import", "claude-code", "--root", str(root), "--state-dir", str(state), "--json",
            "--no-auto-memory", "--url", server.base_url, "--token", token, check=False, timeout=300,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        return None, -1
    try:
        return json.loads(done.stdout), done.returncode
    except json.JSONDecodeError:
        return None, done.returncode


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--transcripts", type=int, default=6)
    parser.add_argument("--bad-each", type=int, default=1)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="fault-claude-import-") as work:
        base = Path(work)
        cwd = base / "kittiwake"
        (cwd / ".git").mkdir(parents=True)
        root, outside = base / "projects", base / "outside"
        folder = root / "-kittiwake"
        folder.mkdir(parents=True)
        (outside / "folder").mkdir(parents=True)
        good: list[str] = []
        bad_lines: set[tuple[str, int]] = set()
        for number in range(args.transcripts):
            markers = [uuid.uuid4().hex[:10] for _ in range(1 + len(BAD_LINES) * args.bad_each)]
            good += markers
            path = folder / f"{uuid.uuid4()}.jsonl"
            kinds = [kind for kind in BAD_LINES for _ in range(args.bad_each)]
            rotated = kinds[number % len(kinds) :] + kinds[: number % len(kinds)]
            for line in transcript(path, path.stem, cwd, markers, rotated):
                bad_lines.add((str(path), line))
        outside_markers = [uuid.uuid4().hex[:10] for _ in range(2)]
        transcript(outside / "file.jsonl", str(uuid.uuid4()), cwd, outside_markers[:1], [])
        transcript(outside / "folder" / "other.jsonl", str(uuid.uuid4()), cwd, outside_markers[1:], [])
        os.mkfifo(folder / "pipe.jsonl")
        (folder / "linked.jsonl").symlink_to(outside / "file.jsonl")
        (root / "-linked-folder").symlink_to(outside / "folder", target_is_directory=True)
        refused = {str(folder / "pipe.jsonl"), str(folder / "linked.jsonl"), str(root / "-linked-folder")}

        with MemoryServer(base / "server") as server:
            token = server.make_token("kittiwake")
            first, first_exit = run(server, token, root, base / "state")
            texts = queued(server, token)
            second, second_exit = run(server, token, root, base / "state")

    named = {(str(item["transcript"]), item["line"]) for item in (first or {}).get("skipped_lines", [])}
    files_named = {transcript for transcript, line in named if line is None}
    print(
        json.dumps(
            {
                "transcripts": args.transcripts,
                "good_turns": len(good),
                "bad_lines": len(bad_lines),
                "good_turns_lost": sum(marker not in texts for marker in good),
                "bad_lines_unreported": len(bad_lines - named) + len(refused - files_named),
                "failed_runs": sum(code != 0 for code in (first_exit, second_exit)),
                "imported_again": (second or {}).get("imported", -1) if second else 1,
                "outside_turns_imported": sum(marker in texts for marker in outside_markers),
                "first_run": {k: v for k, v in (first or {}).items() if k != "skipped_lines"},
                "second_run": {k: v for k, v in (second or {}).items() if k != "skipped_lines"},
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
