"""Write the scope table of docs/security.md from the table the check reads
(claude_code_memory/auth/oauth/route_scopes.py).

    .venv/bin/python docs/generate_scope_table.py          rewrite the table in docs/security.md
    .venv/bin/python docs/generate_scope_table.py --check  exit 1 if it is stale

tests/test_route_scopes.py checks it, so the page cannot drift from the code.
"""

from __future__ import annotations

import sys
from pathlib import Path

from claude_code_memory.auth.oauth import route_scopes

DOCS = Path(__file__).resolve().parent / "security.md"
START = "<!-- scope-table:start (docs/generate_scope_table.py writes this table) -->"
END = "<!-- scope-table:end -->"


def table() -> str:
    """The routes, then the MCP tools, as two markdown tables."""
    by_path: dict[str, list[str]] = {}
    for (method, path), needed in route_scopes.ROUTES.items():
        by_path.setdefault(path, []).append(f"{'any' if method == route_scopes.ANY else method} `{needed}`")
    lines = ["| route | method: what it needs |", "| --- | --- |"]
    lines += [f"| `{path}` | {', '.join(needs)} |" for path, needs in by_path.items()]
    lines += ["", "| MCP tool | needs |", "| --- | --- |"]
    lines += [f"| `{tool}` | `{needed}` |" for tool, needed in route_scopes.TOOLS.items()]
    return "\n".join(lines)


def rewrite(text: str) -> str:
    """``text`` (docs/security.md) with the table between its markers written afresh."""
    head, found, rest = text.partition(START)
    if not found or END not in rest:
        raise SystemExit(f"{DOCS} has no {START} ... {END} markers")
    _, _, tail = rest.partition(END)
    return f"{head}{START}\n{table()}\n{END}{tail}"


def main() -> int:
    current = DOCS.read_text(encoding="utf-8")
    wanted = rewrite(current)
    if "--check" in sys.argv[1:]:
        if wanted != current:
            print(f"{DOCS} is stale: run .venv/bin/python docs/generate_scope_table.py", file=sys.stderr)
            return 1
        return 0
    DOCS.write_text(wanted, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
