"""The hooks through the Claude Code plugin against the same hooks through ``ccmem hooks install``,
as the pinned Claude Code runs them. Prints JSON.

    .venv/bin/python -m bench.perf.plugin_hooks [--memories 1000] [--runs 12]

A fresh server gets ``--memories`` synthetic memories (half in the project), then ``claude -p``
(tests/e2e's pinned CLI, against the e2e tests' fake Anthropic upstream) runs ``--runs`` times in
each of three HOMEs, interleaved and in rotating order so a slow spell of the machine falls on
all: ``settings`` (``ccmem hooks install``: a SessionStart command hook, UserPromptSubmit and
Stop http hooks, ``$CCMEM_TOKEN`` in the environment), ``plugin`` (``ccmem plugin install``:
three exec-form command hooks running ``scripts/memory_hook.sh``, sh and curl, no ``CCMEM_*``
variable), ``plugin-python`` (the same installed plugin with its hooks as they were before,
``python3 -I -S scripts/memory_hook.py hook``) and ``none``. Each prompt is new to the
server. Reported per arm: the wall time of the run, and each hook's duration as Claude Code's
debug log (``--debug-file``) states it — a command hook's "finished … (N ms)", an http hook's
time from its POST to its response. Not a test: numbers depend on the machine.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from datetime import datetime
from pathlib import Path

from bench.harness.paths import CCMEM, ROOT
from bench.harness.server import Server
from bench.harness.stats import percentiles
from bench.harness.synthetic import fresh_queries, synthetic, take
from bench.perf.hooks import claude_home, ingest
from tests.support.fake_anthropic import FakeAnthropic, always_text
from tests.support.node_clients import claude_bin, claude_env

EVENTS = ("SessionStart", "UserPromptSubmit", "Stop")
_STAMP = r"^(\S+) \[\w+\] "
_COMMAND_DONE = re.compile(_STAMP + r"Hooks: (\w+)(?::\w+)? \[.*\] .*finished with status \d+ \((\d+)ms\)")
_HTTP_POST = re.compile(_STAMP + r"Hooks: HTTP hook POST to \S+")
_HTTP_DONE = re.compile(_STAMP + r"Hooks: HTTP hook response status")
_HTTP_EVENT = re.compile(_STAMP + r'.*"Hook (\w+) \(\w+\) success')


def _when(stamp: str) -> float:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def hook_durations(debug_log: str) -> dict[str, float]:
    """{event: seconds} of our hooks in one run's debug log."""
    found: dict[str, float] = {}
    posted: float | None = None
    answered: float | None = None
    for line in debug_log.splitlines():
        if match := _COMMAND_DONE.match(line):
            ours = any(name in line for name in ("memory_hook.py", "memory_hook.sh", "hook_command.py"))
            if match.group(2) in EVENTS and ours:
                found[match.group(2)] = int(match.group(3)) / 1000
        elif match := _HTTP_POST.match(line):
            posted, answered = _when(match.group(1)), None
        elif (match := _HTTP_DONE.match(line)) and posted is not None:
            answered = _when(match.group(1)) - posted
        elif (match := _HTTP_EVENT.match(line)) and answered is not None and match.group(2) in EVENTS:
            found[match.group(2)] = answered
            posted = answered = None
    return found


def install(home: Path, server: Server, token: str) -> None:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), "CCMEM_TOKEN": token}
    subprocess.run(
        [str(CCMEM), "plugin", "install", "--url", server.base, "--claude", str(claude_bin())],
        env=env,
        cwd=home,
        check=True,
        timeout=120,
        capture_output=True,
    )


def install_python_hooks(home: Path, server: Server, token: str) -> None:
    """The plugin as it was before, one Python interpreter per hook (``python3 -I -S
    memory_hook.py hook``): a copy of the marketplace with those hooks, installed and configured
    with the pinned CLI as ``ccmem plugin install`` does (Claude Code runs a directory
    marketplace's plugin from that directory, so the copy is what runs)."""
    repo = ROOT
    copy = Path(tempfile.mkdtemp(prefix="bench-plugin-python-marketplace-"))
    shutil.copytree(repo / ".claude-plugin", copy / ".claude-plugin")
    shutil.copytree(repo / "plugin", copy / "plugin")
    hooks_file = copy / "plugin" / "hooks" / "hooks.json"
    document = json.loads(hooks_file.read_text(encoding="utf-8"))
    script = "${CLAUDE_PLUGIN_ROOT}/scripts/memory_hook.py"
    hook = {"type": "command", "command": "python3", "args": ["-I", "-S", script, "hook"], "timeout": 5}
    for groups in document["hooks"].values():
        groups[0]["hooks"] = [hook]
    hooks_file.write_text(json.dumps(document, indent=2), encoding="utf-8")
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home)}
    values = json.dumps({"server_url": server.base, "user_id": "bench", "token": token})
    for args, stdin in (
        (["marketplace", "add", str(copy)], None),
        (["install", "ccmem@claude-code-memory"], None),
        (["configure", "ccmem@claude-code-memory", "--values-stdin"], values),
    ):
        subprocess.run(
            [str(claude_bin()), "plugin", *args],
            env=env,
            cwd=home,
            input=stdin,
            text=True,
            check=True,
            timeout=120,
            capture_output=True,
        )


def run(home: Path, upstream: str, prompt: str, extra_env: dict[str, str]) -> tuple[float, dict[str, float]]:
    debug = home / "debug.log"
    debug.unlink(missing_ok=True)
    command = [str(claude_bin()), "-p", prompt, "--output-format", "json", "--debug-file", str(debug)]
    started = time.perf_counter()
    completed = subprocess.run(
        command,
        env=claude_env(home, upstream) | extra_env,
        cwd=home / "project",
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    elapsed = time.perf_counter() - started
    if completed.returncode != 0:
        raise SystemExit(f"claude -p failed in {home}:\n{completed.stdout[-2000:]}{completed.stderr[-2000:]}")
    return elapsed, hook_durations(debug.read_text(encoding="utf-8", errors="replace"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=12)
    args = parser.parse_args()
    server = Server()
    try:
        token = server.token("bench")
        ingest(server, token, synthetic(args.memories), "project")
        plugin_home = Path(tempfile.mkdtemp(prefix="bench-plugin-"))
        (plugin_home / "project" / ".git").mkdir(parents=True)
        install(plugin_home, server, token)
        python_home = Path(tempfile.mkdtemp(prefix="bench-plugin-python-"))
        (python_home / "project" / ".git").mkdir(parents=True)
        install_python_hooks(python_home, server, token)
        arms = {
            "settings": (claude_home(server), {"CCMEM_TOKEN": token}),
            "plugin": (plugin_home, {}),
            "plugin-python": (python_home, {}),
            "none": (claude_home(None), {}),
        }
        walls: dict[str, list[float]] = {name: [] for name in arms}
        hooks: dict[str, dict[str, list[float]]] = {name: {event: [] for event in EVENTS} for name in arms}
        prompts = take(fresh_queries(), args.runs * len(arms))
        with FakeAnthropic(always_text("OK.")) as upstream:
            for n in range(args.runs):
                names = list(arms)
                names = names[n % len(names) :] + names[: n % len(names)]
                for name in names:
                    home, env = arms[name]
                    elapsed, durations = run(home, upstream.base_url, prompts.pop(), env)
                    walls[name].append(elapsed)
                    for event, seconds in durations.items():
                        hooks[name][event].append(seconds)
        report = {
            "memories": args.memories,
            "runs": args.runs,
            **{
                name: {
                    "claude_p_wall": percentiles(walls[name]),
                    "hooks": {event: percentiles(values) for event, values in hooks[name].items() if values},
                }
                for name in arms
            },
        }
        print(json.dumps(report, indent=2))
    finally:
        server.stop()


if __name__ == "__main__":
    main()
