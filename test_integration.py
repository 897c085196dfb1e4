"""Check a running claude-code-memory stack end to end, the way Claude Code integrations use it.

    python test_integration.py [--url URL] [--token TOKEN] [--user USER]
                                          [--transport sse|http] [--config FILE]

Any python runs it: without its packages (``python3 test_integration.py`` outside the venv) it
runs itself again with the checkout's ``.venv/bin/python`` or the interpreter of the ``ccmem`` on
PATH, else says in one line what to run.

Steps, one ✓/✗ line each with its time: add → search → context → list → summary → delete.
add, search, list and delete go through ``Mem0MCPClient`` (real MCP to the server); context
and summary through ``ClaudeCodeMemoryManager`` (the context block for a query, then the
session's account of that search). The run writes one uniquely marked memory and deletes it
again, also when a step fails; the manager stores nothing (no conversation turn is captured).

Where it connects, like ``ccmem``: ``--url``, else ``server.host`` / ``server.port`` from
``config.yaml`` and ``.env`` (``--config``, else ``$CCMEM_CONFIG``, else the checkout's of the
package it runs with, else the per-user one ``ccmem setup`` wrote, else the one beside this
script; never the working directory's). As whom:
``--token`` or ``$CCMEM_TOKEN`` (a user token; the user is ``--user``, else ``$CCMEM_USER``,
else ``$USER``); without one, the admin token from ``.env`` acting for the user
``integration-test``.

Exit codes: 0 every step passed; 1 a step failed (or no token); 2 bad usage; 3 no server is
running at the URL.
"""

from __future__ import annotations

import argparse
import getpass
import os
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: Set when this script re-executed itself, so a second failure explains instead of looping.
REEXEC_MARK = "TEST_INTEGRATION_REEXECUTED"


def installation_python() -> str | None:
    """The interpreter of the installation: the checkout's ``.venv``, else the one that runs the
    ``ccmem`` on PATH (the first line of the script pip wrote)."""
    beside = Path(__file__).resolve().parent / ".venv" / "bin" / "python"
    if beside.exists():
        return str(beside)
    import shutil

    ccmem = shutil.which("ccmem")
    if ccmem:
        try:
            with open(ccmem, encoding="utf-8", errors="replace") as script:
                first = script.readline().strip()
        except OSError:
            first = ""
        if first.startswith("#!") and Path(first[2:].split()[0]).exists():
            return first[2:].split()[0]
    return None


def use_installation_python(missing: ImportError) -> None:
    """Run this script again with the installation's interpreter, or say what to run."""
    python = None if os.environ.get(REEXEC_MARK) else installation_python()
    if python is None:
        print(
            f"{missing} under {sys.executable}: run this script with the python of the installation, "
            "e.g. `.venv/bin/python test_integration.py` (./install.sh makes .venv)",
            file=sys.stderr,
        )
        sys.exit(2)
    os.environ[REEXEC_MARK] = "1"
    os.execv(python, [python, str(Path(__file__).resolve()), *sys.argv[1:]])


try:
    import httpx

    from claude_code_memory import SERVICE_NAME
    from claude_code_memory.cli.common import server_url
    from claude_code_memory.config import Settings, load_settings
    from claude_code_memory.errors import MemoryStackError
except ImportError as missing:  # another interpreter than the installation's: python3 test_integration.py
    use_installation_python(missing)
    raise

__test__ = False  # a script, not a pytest module (tests/test_smoke.py runs it)

HERE = Path(__file__).resolve().parent
ADMIN_USER = "integration-test"
EXIT_FAILED, EXIT_UNREACHABLE = 1, 3


class StepFailed(Exception):
    """A step ran but did not see what it should have."""


@dataclass
class Run:
    """What the steps share: the client, the manager, and everything written (to delete it)."""

    client: Any
    manager: Any
    marker: str
    fact: str
    query: str
    created: list[str] = field(default_factory=list)
    deleted: set[str] = field(default_factory=set)


def count(number: int, one: str, many: str) -> str:
    return f"{number} {one if number == 1 else many}"


# -- the steps ---------------------------------------------------------------------------------
def step_add(run: Run) -> str:
    results = run.client.add(run.fact)
    ids = [r["id"] for r in results if r.get("id")]
    run.created += ids
    events = {r.get("event") for r in results}
    if "PENDING" in events:
        raise StepFailed("the memory is waiting for consent: the server requires consent for MCP writes")
    if not ids or not events & {"ADD", "NONE"}:
        raise StepFailed(f"nothing was stored: {results!r}")
    return f"stored {count(len(ids), 'memory', 'memories')} ({ids[0][:8]}…)"


def step_search(run: Run) -> str:
    hits = run.client.search(run.query, limit=5)
    ranks = [n for n, hit in enumerate(hits, start=1) if run.marker in hit.get("memory", "")]
    if not ranks:
        raise StepFailed(f"{run.query!r} did not find the memory among {len(hits)} results")
    return f"found it at rank {ranks[0]} of {len(hits)}"


def step_context(run: Run) -> str:
    context = run.manager.get_context_for_query(run.query)
    if not isinstance(context, str) or run.marker not in context:
        raise StepFailed(f"the context for {run.query!r} does not contain the memory: {context!r}")
    return f"{len(context)} characters of context, with the memory"


def step_list(run: Run) -> str:
    memories = run.client.list()
    if not any(m.get("id") in run.created for m in memories):
        raise StepFailed(f"the memory is not among the {len(memories)} listed")
    return f"{count(len(memories), 'memory', 'memories')} listed, the new one among them"


def step_summary(run: Run) -> str:
    summary = run.manager.summarize_session()
    recalled = [m["id"] for m in summary.get("most_used_memories", [])]
    if summary.get("errors"):
        raise StepFailed(f"the session recorded errors: {summary['errors']!r}")
    if summary.get("searches", 0) < 1 or not set(recalled) & set(run.created):
        raise StepFailed(f"the session summary does not show the context search: {summary!r}")
    searches = count(summary["searches"], "search", "searches")
    return f"{searches}, {count(summary['memories_retrieved'], 'memory', 'memories')} recalled, no errors"


def step_delete(run: Run) -> str:
    for memory_id in run.created:
        if memory_id not in run.deleted:
            run.client.delete(memory_id)
            run.deleted.add(memory_id)
    left = [m["id"] for m in run.client.list() if m.get("id") in run.created]
    if left:
        raise StepFailed(f"still listed after delete: {', '.join(left)}")
    return f"deleted {len(run.deleted)}, none left"


STEPS: list[tuple[str, Callable[[Run], str]]] = [
    ("add", step_add),
    ("search", step_search),
    ("context", step_context),
    ("list", step_list),
    ("summary", step_summary),
    ("delete", step_delete),
]


# -- setting up --------------------------------------------------------------------------------
def settings_for(config: str | None) -> Settings:
    from claude_code_memory.config.locations import choose_config

    chosen = choose_config(config)
    # As ccmem (never the working directory's); with nothing set up, this checkout's.
    if chosen.source == "defaults" and (HERE / "config.yaml").exists():
        return load_settings(config_path=HERE / "config.yaml")
    return load_settings(config_path=chosen)


def not_running(base: str, exc: Exception) -> str:
    return (
        f"No claude-code-memory server is answering at {base} ({exc.__class__.__name__}). "
        "Start it in another terminal with `ccmem serve` (or `ccmem stack up`) (on a fresh checkout run "
        "`./install.sh` first), wait for its 'listening on' line, then run this script again. "
        "If the server runs somewhere else, pass --url or set CCMEM_SERVER__HOST and "
        "CCMEM_SERVER__PORT in .env; `ccmem doctor` checks the whole setup."
    )


def is_ours(body: Any) -> bool:
    """A /health body of this server: ``service`` names it (older versions: its fields)."""
    if not isinstance(body, dict):
        return False
    return body.get("service") == SERVICE_NAME or {"version", "vector_store", "database"} <= set(body)


def not_ours(base: str, response: httpx.Response) -> str:
    kind = response.headers.get("content-type", "no content type").split(";")[0]
    return (
        f"Something answers at {base}, but it is not a claude-code-memory server: {base}/health "
        f"answered HTTP {response.status_code} ({kind}) without this server's identity. Another "
        "program holds that port, or the URL is wrong. Pass --url with the right address, or "
        "check server.port (CCMEM_SERVER__PORT in .env; a port set only in one command's "
        "environment does not stick); `ccmem doctor` names what holds the port."
    )


def health(base: str) -> dict[str, Any]:
    """``/health``; exits 3 when nothing (or something else) answers, 1 when the server reports
    a problem."""
    try:
        response = httpx.get(f"{base}/health", timeout=10)
    except httpx.HTTPError as exc:
        print(not_running(base, exc), file=sys.stderr)
        sys.exit(EXIT_UNREACHABLE)
    try:
        body = response.json()
    except ValueError:
        body = None
    if not is_ours(body):
        print(not_ours(base, response), file=sys.stderr)
        sys.exit(EXIT_UNREACHABLE)
    if not isinstance(body, dict) or response.status_code != 200:
        print(f"✗ health: {base}/health answered HTTP {response.status_code}: {response.text[:200]}")
        sys.exit(EXIT_FAILED)
    return body


def arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Check a running claude-code-memory server: add, search, context, list, summary, delete.",
        epilog="Exit codes: 0 all passed, 1 a step failed, 2 bad usage, 3 no server of ours answers.",
    )
    parser.add_argument("--url", help="server URL (default: server.host and server.port from config)")
    parser.add_argument("--token", help="a user token (default: $CCMEM_TOKEN, else the admin token)")
    parser.add_argument(
        "--user", help=f"the user (default: $CCMEM_USER or $USER; {ADMIN_USER} with the admin token)"
    )
    parser.add_argument(
        "--transport", choices=["sse", "http"], default="sse", help="MCP transport (default sse)"
    )
    parser.add_argument(
        "--config", help="config.yaml to read (default: $CCMEM_CONFIG, else the one ccmem reads)"
    )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = arguments(argv)
    try:
        settings = settings_for(args.config)
    except MemoryStackError as exc:
        print(f"error: {exc.message}", file=sys.stderr)
        return EXIT_FAILED
    base = server_url(settings, args.url)
    status = health(base)  # first: "start the server" is the more useful news
    token = args.token or os.environ.get("CCMEM_TOKEN")
    if token:
        user = args.user or os.environ.get("CCMEM_USER") or os.environ.get("USER") or getpass.getuser()
        who = f"user {user} (user token)"
    elif settings.server.admin_token:
        token, user = settings.server.admin_token, args.user or ADMIN_USER
        who = f"user {user} (admin token)"
    else:
        print(
            "error: no token: pass --token (a user token from `ccmem token create --user NAME`), "
            "set CCMEM_TOKEN, or keep CCMEM_ADMIN_TOKEN in .env (./install.sh writes it)",
            file=sys.stderr,
        )
        return EXIT_FAILED

    print(f"claude-code-memory {status.get('version', '?')} at {base}, {who}, MCP over {args.transport}")

    # Imported after the health check: a missing server should not wait for the MCP SDK.
    from claude_code_memory.client.conversation_memory import ClaudeCodeMemoryManager
    from claude_code_memory.client.mcp_client import Mem0MCPClient

    marker = f"bluefin-{uuid.uuid4().hex[:8]}"
    client = Mem0MCPClient(
        base, user, token, client_name=settings.mem0.mcp.client_name, transport=args.transport, timeout=30
    )
    run = Run(
        client=client,
        manager=ClaudeCodeMemoryManager(client, settings),
        marker=marker,
        fact=f"Integration check {marker}: the deploy script of project {marker} is scripts/ship.sh",
        query=f"where is the deploy script of project {marker}?",
    )
    failed = False
    try:
        for name, step in STEPS:
            if failed:
                print(f"- {name:<8} skipped")
                continue
            started = time.perf_counter()
            try:
                detail = step(run)
            except (StepFailed, MemoryStackError) as exc:
                detail, failed = str(exc), True
            except Exception as exc:  # a bug in the stack: say what, keep the one-line format
                detail, failed = f"{exc.__class__.__name__}: {exc}", True
            took = (time.perf_counter() - started) * 1000
            print(f"{'✗' if failed else '✓'} {name:<8} {took:7.0f} ms  {detail}", flush=True)
    finally:
        cleanup(run)
        run.manager.close()
        client.close()
    return EXIT_FAILED if failed else 0


def cleanup(run: Run) -> None:
    """Delete what the run wrote, whatever happened; say so if that fails."""
    for memory_id in run.created:
        if memory_id in run.deleted:
            continue
        try:
            run.client.delete(memory_id)
            run.deleted.add(memory_id)
        except MemoryStackError as exc:
            print(f"! could not delete {memory_id}: {exc}", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
