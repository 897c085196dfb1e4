"""Bench only: a throwaway server for one fault check, and what its checks share.

:func:`scratch_server` starts the real server (``ccmem serve``) on a free loopback port with a
temporary data directory and a home of its own (no ``CCMEM_*`` variable nor ``DATABASE_URL`` of
the caller's environment reaches it), makes a user's token, yields the base URL and the token,
then stops the server by its PID and removes the directory. ``bench/faults/fuzz.py`` and
``bench/faults/nested_json.py`` run on it.
"""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from bench.harness.paths import ROOT

#: What an MCP streamable HTTP request must accept.
MCP_ACCEPT = {"Accept": "application/json, text/event-stream"}


def ccmem() -> str:
    beside = Path(sys.executable).parent / "ccmem"
    return str(beside if beside.exists() else ROOT / ".venv" / "bin" / "ccmem")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def scratch_server(
    prefix: str, user: str, settings: dict[str, str] | None = None
) -> Iterator[tuple[str, str]]:
    """A started server and a token of ``user``: ``(base URL, token)``; stopped afterwards.
    ``settings``: ``CCMEM_…`` variables of its own."""
    work = Path(tempfile.mkdtemp(prefix=prefix))
    port, admin = free_port(), secrets.token_urlsafe(32)
    (work / "home").mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("CCMEM_") and k != "DATABASE_URL"}
    env |= {"HOME": str(work / "home"), "CCMEM_ADMIN_TOKEN": admin, "NO_PROXY": "127.0.0.1,localhost"}
    env |= settings or {}
    data = work / "data"
    command = [ccmem(), "serve", "--host", "127.0.0.1", "--port", str(port), "--data-dir", str(data)]
    with open(work / "server.log", "wb") as log:
        process = subprocess.Popen(command, cwd=work, env=env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                if httpx.get(f"{base}/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline or process.poll() is not None:
                raise SystemExit(f"server did not start; see {work / 'server.log'}")
            time.sleep(0.3)
        created = subprocess.run(
            [ccmem(), "token", "create", "--user", user, "--data-dir", str(data)],
            cwd=work,
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        yield base, created.stdout.strip().splitlines()[-1]
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    shutil.rmtree(work, ignore_errors=True)
