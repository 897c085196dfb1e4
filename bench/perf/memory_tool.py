"""What a memory-tool command costs in the server, in-process (no HTTP). Prints JSON.

    .venv/bin/python -m bench.perf.memory_tool [--files 200] [--rounds 50]

One store (SQLite, the embedded vector store, the ONNX embedder) in a temporary directory;
one user with ``--files`` files in 10 directories, then ``--rounds`` of each command:
``create`` (gate + embedding + SQL), ``view`` of a file, ``view`` of ``/memories`` (a listing
of every file), ``str_replace`` (gate + a new embedding), ``rename`` of a file, ``delete`` of a
file. Milliseconds, p50 and p95. Not a test: the numbers depend on the machine and on what
else runs on it.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from collections.abc import Callable
from typing import Any

from claude_code_memory.config import load_settings
from claude_code_memory.memories.server_parts import ServerParts

USER = "bench"


def percentiles(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "p50_ms": round(statistics.median(ordered), 2),
        "p95_ms": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))], 2),
        "n": len(ordered),
    }


def timed(run: Callable[[], Any], rounds: int) -> list[float]:
    samples = []
    for _ in range(rounds):
        start = time.perf_counter()
        run()
        samples.append((time.perf_counter() - start) * 1000)
    return samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=50)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as data:
        settings = load_settings(
            config_path=None,
            environ={},
            overrides={"server.data_dir": data, "memory_tool.max_files": args.files + 4 * args.rounds + 10},
        )
        parts = ServerParts(settings)
        service = parts.service

        def tool(**command: Any) -> str:
            return service.memory_tool(user_id=USER, app_name="bench", command=command)

        try:
            for number in range(args.files):
                tool(
                    command="create",
                    path=f"/memories/d{number % 10}/f{number}.md",
                    file_text=f"note {number}: the build uses tool number {number}\nsecond line\n",
                )
            counter = iter(range(10**9))
            results = {
                "create": timed(
                    lambda: tool(
                        command="create", path=f"/memories/new/n{next(counter)}.md", file_text="fresh\n"
                    ),
                    args.rounds,
                ),
                "view_file": timed(lambda: tool(command="view", path="/memories/d3/f3.md"), args.rounds),
                "view_root": timed(lambda: tool(command="view", path="/memories"), args.rounds),
            }
            flip = iter(range(10**9))

            def replace() -> None:
                n = next(flip)
                old, new = ("second line", "2nd line") if n % 2 == 0 else ("2nd line", "second line")
                tool(command="str_replace", path="/memories/d5/f5.md", old_str=old, new_str=new)

            results["str_replace"] = timed(replace, args.rounds)
            moves = iter(range(10**9))

            def rename() -> None:
                n = next(moves)
                tool(command="rename", old_path=f"/memories/new/n{n}.md", new_path=f"/memories/moved/n{n}.md")

            results["rename"] = timed(rename, args.rounds)
            gone = iter(range(10**9))
            results["delete"] = timed(
                lambda: tool(command="delete", path=f"/memories/moved/n{next(gone)}.md"), args.rounds
            )
        finally:
            parts.close()
    print(
        json.dumps(
            {
                "files": args.files,
                "commands": {name: percentiles(samples) for name, samples in results.items()},
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
