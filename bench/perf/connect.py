"""From a fresh HOME with no Claude Code configuration to "a new ``claude -p`` session is told a fact
stored in an earlier one", by the package route. Prints JSON.

    .venv/bin/python -m bench.perf.connect [--wheel PATH] [--hooks]

The commands a user types, each timed: ``pip install <wheel>`` into a fresh virtualenv (the
package download; the wheel is built first unless ``--wheel`` names one), ``ccmem up``,
``ccmem connect claude-code`` (the plugin route; ``--hooks``: the hooks route). Then two
``claude -p`` sessions of the pinned CLI (tests/e2e) against the e2e tests' fake Anthropic
upstream, from an environment with no ``CCMEM_*`` variable: the first stores a fact with the
MCP tool, the second is asked about it and the fact must be in its request upstream. The stack
is stopped by its PIDs at the end. Not a test: numbers depend on the machine.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from bench.harness.paths import ROOT as REPO
from tests.support.fake_anthropic import FakeAnthropic, ToolThenAnswer, always_text
from tests.support.node_clients import claude_bin, claude_env, run_claude
from tests.support.processes import free_port

REPLY = "Noted, thanks."


def timed(argv: list[str], **kwargs: Any) -> float:
    started = time.monotonic()
    completed = subprocess.run(argv, capture_output=True, text=True, check=False, **kwargs)
    took = time.monotonic() - started
    if completed.returncode != 0:
        raise SystemExit(
            f"{' '.join(argv)} exited {completed.returncode}:\n{completed.stdout}\n{completed.stderr}"
        )
    return took


def build_wheel(out: Path) -> Path:
    timed([sys.executable, "-m", "build", "--wheel", "--outdir", str(out), str(REPO)])
    return next(out.glob("*.whl"))


def stop_stack(state: Path) -> None:
    pids: list[int] = []
    pid_file = state / "run" / "stack.pid"
    if pid_file.exists():
        pids.append(int(pid_file.read_text()))
    try:
        services = json.loads((state / "run" / "stack.json").read_text())["services"]
        pids += [service["pid"] for service in services.values() if service.get("pid")]
    except (FileNotFoundError, ValueError, KeyError):
        pass
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--wheel", type=Path, help="the wheel to install (default: build one)")
    parser.add_argument("--hooks", action="store_true", help="connect by the hooks route")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-connect-") as scratch:
        work = Path(scratch)
        wheel = args.wheel or build_wheel(work / "dist")
        home, venv = work / "home", work / "venv"
        home.mkdir()
        timed([sys.executable, "-m", "venv", str(venv)])
        # A user's shell: the new venv's and the pinned Claude Code's bin directories on PATH.
        env = claude_env(home, "http://127.0.0.1:9") | {
            "PATH": os.pathsep.join([str(venv / "bin"), str(claude_bin().parent), "/usr/bin", "/bin"]),
            "USER": "bench",
            "LOGNAME": "bench",
            "CCMEM_SERVER__PORT": str(free_port()),
            "CCMEM_UI__PORT": str(free_port()),
            "CCMEM_PROXY__PORT": str(free_port()),
        }
        steps: dict[str, float] = {}
        commands = [
            f"pip install {wheel.name}",
            "ccmem up",
            "ccmem connect claude-code" + (" --hooks" if args.hooks else ""),
        ]
        steps["install"] = timed(
            [str(venv / "bin" / "pip"), "install", "--quiet", str(wheel)], env=env, cwd=home
        )
        try:
            steps["up"] = timed(["ccmem", "up", "--timeout", "300"], env=env, cwd=home)
            connect = ["ccmem", "connect", "claude-code"] + (["--hooks"] if args.hooks else [])
            steps["connect"] = timed(connect, env=env, cwd=home)
            fact = f"My favourite build tool is called zebrafinch {uuid.uuid4().hex[:6]}"
            tools = ["mcp__memory"] if args.hooks else ["mcp__plugin_ccmem_memory"]
            tool = f"{tools[0]}__add_memories"
            started = time.monotonic()
            with FakeAnthropic(ToolThenAnswer(tool, {"text": fact}, REPLY)) as upstream:
                first = run_claude(
                    f"Remember this: {fact}",
                    home=home,
                    upstream_url=upstream.base_url,
                    allowed_tools=tools,
                    env={"ENABLE_TOOL_SEARCH": "false"},
                )
            steps["session_store"] = time.monotonic() - started
            started = time.monotonic()
            with FakeAnthropic(always_text(REPLY)) as upstream:
                prompt = "Which build tool do I like best?"
                second = run_claude(prompt, home=home, upstream_url=upstream.base_url)
                told = any(fact in json.dumps(request.body) for request in upstream.message_requests)
            steps["session_told"] = time.monotonic() - started
        finally:
            stop_stack(home / ".local" / "state" / "ccmem")
    after_download = steps.get("up", 0) + steps.get("connect", 0)
    print(
        json.dumps(
            {
                "route": "hooks" if args.hooks else "plugin",
                "commands_typed": commands,
                "commands_after_download": len(commands) - 1,
                "seconds": {name: round(value, 2) for name, value in steps.items()},
                "seconds_after_download_to_connected": round(after_download, 2),
                "seconds_after_download_to_told": round(sum(steps.values()) - steps.get("install", 0), 2),
                "seconds_install_to_told": round(sum(steps.values()), 2),
                "first_session_ok": first.event("result").get("result") == REPLY,
                "new_session_told_the_fact": told and second.event("result").get("result") == REPLY,
                "claude_code": subprocess.run(
                    [str(claude_bin()), "--version"], capture_output=True, text=True, check=False
                ).stdout.strip(),
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
