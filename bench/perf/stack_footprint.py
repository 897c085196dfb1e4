"""What a resident stack costs, against what starting it costs: the numbers behind the choice of
the on-demand start as the default and the user service as an opt-in (docs/autostart.md).
Prints JSON.

    .venv/bin/python -m bench.perf.stack_footprint [--runs 3] [--service api --service ui]

In a throwaway HOME (``ccmem setup``, free loopback ports), each run: ``ccmem up`` timed to
"every service healthy" (the seconds each service took, as ``up`` reports them; they include
``up``'s 2 s confirmation that a healthy service stays up), the resident memory (``VmRSS``) of
the supervisor and each service once healthy and again after ten searches (the embedding model
in use), then ``ccmem down``. Not a test: numbers depend on the machine and its load.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from tests.support.processes import free_port

REPO = Path(__file__).resolve().parents[2]  # the repository
CCMEM = Path(sys.executable).parent / "ccmem"


HEALTHY = re.compile(r"✓ (\w+) healthy at \S+ after ([\d.]+) s")


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return round(int(line.split()[1]) / 1024, 1)
    return 0.0


def footprint(state: Path) -> dict[str, float]:
    stack = json.loads((state / "run" / "stack.json").read_text())
    sizes = {"supervisor": rss_mb(int(stack["supervisor_pid"]))}
    sizes |= {name: rss_mb(int(service["pid"])) for name, service in stack["services"].items()}
    sizes["total"] = round(sum(sizes.values()), 1)
    return sizes


def ccmem(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [str(CCMEM), *args],
        env=env,
        cwd=env["HOME"],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"ccmem {' '.join(args)} exited {done.returncode}:\n{done.stdout}\n{done.stderr}")
    return done


def search(env: dict[str, str], port: int, times: int) -> None:
    import httpx

    config = Path(env["XDG_CONFIG_HOME"]) / "ccmem" / ".env"
    admin = next(
        line.split("=", 1)[1].strip()
        for line in config.read_text().splitlines()
        if line.startswith("CCMEM_ADMIN_TOKEN=")
    )
    headers = {"Authorization": f"Bearer {admin}"}
    base = f"http://127.0.0.1:{port}"
    httpx.post(
        f"{base}/api/v1/memories",
        json={"text": "The staging database is pg-staging-2.", "user_id": "bench", "infer": False},
        headers=headers,
        timeout=60,
    ).raise_for_status()
    for turn in range(times):
        httpx.post(
            f"{base}/api/v1/memories/search",
            json={"query": f"which staging database {turn}", "user_id": "bench"},
            headers=headers,
            timeout=60,
        ).raise_for_status()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--service", action="append", help="as `ccmem up --service` (default: every one)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="ccmem-footprint-") as scratch:
        home = Path(scratch)
        env = {
            key: value
            for key, value in os.environ.items()
            if not key.startswith(("CCMEM_", "XDG_")) and key not in ("DATABASE_URL", "QDRANT_URL")
        }
        api_port = free_port()
        env |= {
            "HOME": str(home),
            "XDG_CONFIG_HOME": str(home / ".config"),
            "XDG_DATA_HOME": str(home / ".local" / "share"),
            "XDG_STATE_HOME": str(home / ".local" / "state"),
            "CCMEM_SERVER__PORT": str(api_port),
            "CCMEM_UI__PORT": str(free_port()),
            "CCMEM_PROXY__PORT": str(free_port()),
        }
        ccmem(env, "setup")
        state = home / ".local" / "state" / "ccmem"
        services = [part for name in args.service or [] for part in ("--service", name)]
        runs: list[dict[str, Any]] = []
        for _ in range(args.runs):
            started = time.monotonic()
            upped = ccmem(env, "up", *services, "--timeout", "300")
            took = round(time.monotonic() - started, 2)
            healthy = {name: float(seconds) for name, seconds in HEALTHY.findall(upped.stderr)}
            idle = footprint(state)
            search(env, api_port, 10)
            used = footprint(state)
            ccmem(env, "down")
            runs.append(
                {
                    "up_seconds": took,
                    "healthy_after_seconds": healthy,
                    "rss_mb_idle": idle,
                    "rss_mb_after_search": used,
                }
            )
    print(
        json.dumps(
            {"machine": f"{os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}", "runs": runs}, indent=2
        )
    )


if __name__ == "__main__":
    main()
