"""Fault check: users whose Claude Code hooks name the same session id. Prints JSON.

    .venv/bin/python -m bench.faults.hook_state [--rounds 5] [--users 6]

Starts a server on 127.0.0.1 (stopped by PID at the end) on a temporary data directory. Each
round, ``--users`` users (each with a token of their own and one memory) send their hooks for
one shared session id, each step by all users at once (threads behind a barrier):

1. ``SessionStart`` (``startup``, a model of their own): each is briefed with their memory;
2. every odd user sends ``SessionStart`` ``clear`` and ``SessionEnd`` for the session id;
3. ``UserPromptSubmit`` with a prompt of their own, about their memory;
4. ``Stop`` with a reply of their own.

Then each user's consent queue must hold exactly their own turn (``User: <their prompt>
...Assistant: <their reply>``), with their model when they did not end the session, and an even
user must not have been given their memory again at step 3 (another user's clear must not
empty their session). ``foreign_captures`` (a queued turn holding another user's prompt or
reply), ``lost_captures`` (a user whose turn is not queued), ``wrong_models`` and
``state_changed_by_another`` must be 0.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import threading
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from tests.support.server import MemoryServer

#: What must be 0 (the module's docstring).
FIGURES = ("foreign_captures", "lost_captures", "wrong_models", "state_changed_by_another")
WORDS = ("heron", "kestrel", "marten", "osprey", "plover", "shrike", "tern", "wigeon", "avocet", "bittern")


def all_at_once(count: int, step: Callable[[int], Any]) -> list[Any]:
    """``step(i)`` for every user, started together; the answers in users' order."""
    answers: list[Any] = [None] * count
    barrier = threading.Barrier(count)

    def run(index: int) -> None:
        barrier.wait()
        answers[index] = step(index)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return answers


def context_of(answer: dict[str, Any]) -> str:
    return str(answer.get("hookSpecificOutput", {}).get("additionalContext", ""))


def one_round(server: MemoryServer, users: int, project: Path) -> dict[str, int]:
    tag = uuid.uuid4().hex[:6]
    names = [f"hook-{tag}-{i}" for i in range(users)]
    tokens = [server.make_token(name) for name in names]
    clients = [
        httpx.Client(base_url=server.base_url, headers={"Authorization": f"Bearer {t}"}, timeout=120)
        for t in tokens
    ]
    session = str(uuid.uuid4())
    prompts = [f"Which bird is the codename of my deploy pipeline? ({names[i]})" for i in range(users)]
    replies = [f"The codename is {WORDS[i % len(WORDS)]} ({names[i]})" for i in range(users)]
    models = [f"model-{names[i]}" for i in range(users)]
    try:
        memories = []
        for i, client in enumerate(clients):
            text = f"The codename of my deploy pipeline is the bird {WORDS[i % len(WORDS)]}"
            created = client.post("/api/v1/memories", json={"text": text, "project": project.name})
            created.raise_for_status()
            body = created.json()
            memories.append(str(body.get("id") or body["results"][0]["id"]))

        def hook(index: int, event: str, **fields: Any) -> dict[str, Any]:
            body = {"hook_event_name": event, "session_id": session, "cwd": str(project)} | fields
            response = clients[index].post("/api/v1/hooks/claude-code", json=body)
            response.raise_for_status()
            return dict(response.json())

        all_at_once(users, lambda i: hook(i, "SessionStart", source="startup", model=models[i]))

        def clear_and_end(i: int) -> None:
            if i % 2:
                hook(i, "SessionStart", source="clear")
                hook(i, "SessionEnd", reason="clear")

        all_at_once(users, clear_and_end)
        given = all_at_once(users, lambda i: context_of(hook(i, "UserPromptSubmit", prompt=prompts[i])))
        all_at_once(users, lambda i: hook(i, "Stop", last_assistant_message=replies[i]))

        figures = dict.fromkeys(FIGURES, 0)
        for i, client in enumerate(clients):
            pending = client.get("/api/v1/consent/pending").json()["items"]
            own = f"User: {prompts[i]}\n\nAssistant: {replies[i]}"
            others = [text for j in range(users) if j != i for text in (prompts[j], replies[j])]
            figures["foreign_captures"] += sum(
                any(text in item["content"] for text in others) for item in pending
            )
            mine = [item for item in pending if item["content"] == own]
            figures["lost_captures"] += not mine
            expected_model = None if i % 2 else models[i]
            figures["wrong_models"] += any(item["model"] != expected_model for item in mine)
            figures["state_changed_by_another"] += i % 2 == 0 and memories[i] in given[i]
        return figures
    finally:
        for client in clients:
            client.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--users", type=int, default=6)
    args = parser.parse_args()
    totals = dict.fromkeys(FIGURES, 0)
    with tempfile.TemporaryDirectory(prefix="ccmem-hook-state-") as work:
        project = Path(work) / "pipeline-repo"
        (project / ".git").mkdir(parents=True)
        with MemoryServer(Path(work) / "server") as server:
            for _ in range(args.rounds):
                for key, value in one_round(server, args.users, project).items():
                    totals[key] += value
    print(json.dumps({"rounds": args.rounds, "users": args.users, **totals}, indent=2))


if __name__ == "__main__":
    main()
