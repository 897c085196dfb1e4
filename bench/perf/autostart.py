"""The start on demand: how long from ``claude`` started with the memory server down to the first
recalled memory, and what the hooks cost with the server up, before and after it. Prints JSON.

    .venv/bin/python -m bench.bench_autostart [--runs 5] [--hook-runs 40] [--out FILE]

A user's stack in a throwaway HOME (tests/support/user_stack.py: ``ccmem stack up`` with the
per-user directories), Claude Code connected by the hooks route (``ccmem hooks install
--token-file``, ``connection.json`` with the stack's start command), one fact stored.

``cold``: every process of the stack killed with SIGKILL, then ``claude -p`` (the pinned CLI,
against the e2e tests' fake Anthropic upstream); the time from starting ``claude`` to the first
upstream request whose body carries the fact. ``warm``: the same with the stack up. Their
difference is what the start costs the first session.

``hooks``: the hook scripts run directly with the server up, as Claude Code runs them
(``hook_command.py`` with the token file, ``memory_hook.sh`` with the plugin's options), each as
it is and as it was at ``--before`` (the commit before the start on demand), interleaved, with a
new UserPromptSubmit input each run: the fast path must cost what it did. Not a test: the
numbers depend on the machine (record ``uptime``'s load beside them).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from tests.support.fake_anthropic import FakeAnthropic, Reply
from tests.support.node_clients import claude_bin, claude_env
from tests.support.server import add_memory, ccmem_bin
from tests.support.user_stack import UserStack

ROOT = Path(__file__).resolve().parents[2]  # the repository
FACT = "The bittern batch job is scheduled by the plover-quay timer."
PROMPT = "Which timer schedules the bittern batch job?"
HOOK_PATH = "/api/v1/hooks/claude-code"


def summary(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {
        "n": len(ordered),
        "median": round(statistics.median(ordered), 4),
        "p90": round(ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))], 4),
        "min": round(ordered[0], 4),
        "max": round(ordered[-1], 4),
    }


class FirstRecall:
    """A responder that notes when the first request carrying the fact arrived."""

    def __init__(self) -> None:
        self.seen_at: float | None = None
        self.lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> Reply:
        if FACT in json.dumps(body):
            with self.lock:
                self.seen_at = self.seen_at or time.perf_counter()
        return Reply.text("OK.")


def session(user: UserStack, upstream: FakeAnthropic, recall: FirstRecall) -> float:
    recall.seen_at = None
    started = time.perf_counter()
    done = subprocess.run(
        [str(claude_bin()), "-p", PROMPT],
        env=claude_env(user.home, upstream.base_url) | user.env,
        cwd=user.home / "project",
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    if done.returncode != 0 or recall.seen_at is None:
        raise SystemExit(f"no recall (exit {done.returncode}):\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    return recall.seen_at - started


def old_scripts(commit: str) -> Path:
    """The hook scripts as they were at ``commit``, in a directory of their own."""
    directory = Path(tempfile.mkdtemp(prefix="bench-autostart-before-"))
    for path in (
        "claude_code_memory/client/hook_command.py",
        "plugin/scripts/memory_hook.sh",
        "plugin/scripts/memory_hook.py",
    ):
        text = subprocess.run(
            ["git", "-C", str(ROOT), "show", f"{commit}:{path}"], capture_output=True, text=True, check=True
        ).stdout
        (directory / Path(path).name).write_text(text, encoding="utf-8")
    return directory


def hook_seconds(argv: list[str], env: dict[str, str], body: dict[str, Any]) -> float:
    started = time.perf_counter()
    done = subprocess.run(argv, input=json.dumps(body).encode(), env=env, capture_output=True, timeout=60)
    elapsed = time.perf_counter() - started
    if done.returncode != 0 or b"additionalContext" not in done.stdout:
        raise SystemExit(f"{argv[-1]} gave no recall: {done.stdout[:300]!r} {done.stderr[:300]!r}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--hook-runs", type=int, default=40)
    parser.add_argument("--before", default="5a3ebb4", help="the commit whose hook scripts are compared")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()

    user = UserStack.make(Path(tempfile.mkdtemp(prefix="bench-autostart-")) / "home")
    (user.home / "project" / ".git").mkdir(parents=True)
    try:
        user.up()
        token = user.token("bench")
        token_file = user.state_dir.parent / "claude-code.token"
        token_file.write_text(token + "\n", encoding="utf-8")
        os.chmod(token_file, 0o600)
        subprocess.run(
            [str(ccmem_bin()), "hooks", "install", "--token-file", str(token_file), "--url", user.base_url],
            env=user.env,
            cwd=user.home,
            capture_output=True,
            check=True,
            timeout=120,
        )
        user.connect(token_file)
        add_memory(user, token, FACT, project="project")  # type: ignore[arg-type]

        recall = FirstRecall()
        cold: list[float] = []
        warm: list[float] = []
        if args.runs:
            with FakeAnthropic(recall) as upstream:
                session(user, upstream, recall)  # Claude Code's own first run in this HOME
                for _ in range(args.runs):
                    user.kill9()
                    cold.append(session(user, upstream, recall))
                    warm.append(session(user, upstream, recall))

        before = old_scripts(args.before)
        url = user.base_url + HOOK_PATH
        plugin_env = user.env | {
            "CLAUDE_PLUGIN_OPTION_SERVER_URL": user.base_url,
            "CLAUDE_PLUGIN_OPTION_TOKEN": token,
            "CLAUDE_PROJECT_DIR": str(user.home / "project"),
        }
        # The plugin stands aside for settings hooks: its arms run in a HOME without them.
        plugin_home = user.home.parent / "plugin-home"
        (plugin_home / "project" / ".git").mkdir(parents=True, exist_ok=True)
        plugin_env = plugin_env | {"HOME": str(plugin_home)}
        python = sys.executable
        arms = {
            "settings_before": (
                [python, "-I", "-S", str(before / "hook_command.py"), url, "4", str(token_file)],
                user.env,
            ),
            "settings_after": (
                [
                    python,
                    "-I",
                    "-S",
                    str(ROOT / "claude_code_memory/client/hook_command.py"),
                    url,
                    "9",
                    str(token_file),
                ],
                user.env,
            ),
            "plugin_sh_before": (["/bin/sh", str(before / "memory_hook.sh")], plugin_env),
            "plugin_sh_after": (["/bin/sh", str(ROOT / "plugin/scripts/memory_hook.sh")], plugin_env),
        }
        timings: dict[str, list[float]] = {name: [] for name in arms}
        for n in range(args.hook_runs):
            names = list(arms)
            names = names[n % len(names) :] + names[: n % len(names)]
            for name in names:
                argv, env = arms[name]
                body = {
                    "hook_event_name": "UserPromptSubmit",
                    "session_id": str(uuid.uuid4()),
                    "cwd": str(Path(env["HOME"]) / "project"),
                    "transcript_path": "/dev/null",
                    "prompt": f"{PROMPT} ({uuid.uuid4().hex[:6]})",
                }
                timings[name].append(hook_seconds(argv, env, body))
        report = {
            "question": "claude started with the server down: seconds to the first recalled memory; "
            "the hooks' cost with the server up, before and after the start on demand",
            "load_average": os.getloadavg(),
            "cpus": os.cpu_count(),
            "first_recall_seconds": {
                "cold_server_down": summary(cold),
                "warm_server_up": summary(warm),
                "start_cost_median": round(statistics.median(cold) - statistics.median(warm), 4),
            }
            if cold
            else None,
            "hook_seconds_server_up": {name: summary(values) for name, values in timings.items() if values},
        }
        text = json.dumps(report, indent=2)
        print(text)
        if args.out:
            args.out.write_text(text + "\n", encoding="utf-8")
    finally:
        user.stop()


if __name__ == "__main__":
    main()
