"""Anthropic's memory tool on the real server: the MCP tool ``memory_20250818`` through the
official MCP SDK, ``POST /api/v1/memory-tool``, and files that are ordinary memories (searched
by ``search_memory``, listed over REST with their path, invisible to another user).

One server for the module; every test works as its own fresh user.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import anthropic
import anyio
import httpx
import pytest
from mcp import Client

from claude_code_memory.client.memory_tool import RemoteMemoryTool
from tests.support.fake_anthropic import FakeAnthropic, ToolSequence
from tests.support.server import MemoryServer
from tests.test_mcp import bearer, connect, failed, ok

pytestmark = pytest.mark.timeout(300)

TOOL = "memory_20250818"
HEADER = "Here're the files and directories up to 2 levels deep in {}, excluding hidden items:"
SECRET = "sk-ant-api03-" + "Q7x" * 30
MAX_FILE_BYTES = 2000


@pytest.fixture(scope="module")
def memory_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MemoryServer]:
    caps = {"CCMEM_MEMORY_TOOL__MAX_FILE_BYTES": str(MAX_FILE_BYTES), "CCMEM_MEMORY_TOOL__MAX_FILES": "5"}
    with MemoryServer(tmp_path_factory.mktemp("memory-tool-server"), env=caps) as server:
        yield server


def new_user(server: MemoryServer, name: str) -> tuple[str, str]:
    """A fresh user and a token of theirs, made with the admin token over REST (quicker than
    ``ccmem token create``)."""
    user = f"{name}-{uuid.uuid4().hex[:8]}"
    made = httpx.post(
        f"{server.base_url}/api/v1/tokens", json={"user_id": user}, headers=server.admin_headers(), timeout=30
    )
    assert made.status_code == 201, made.text
    return user, made.json()["token"]


def memory_tool(server: MemoryServer, token: str, command: dict[str, Any]) -> httpx.Response:
    return httpx.post(
        f"{server.base_url}/api/v1/memory-tool", json=command, headers=bearer(token), timeout=30
    )


async def call(session: Client, **arguments: Any) -> Any:
    return await session.call_tool(TOOL, arguments)


# -- MCP ----------------------------------------------------------------------------------------


def test_the_mcp_tool_is_listed_with_the_native_input(memory_server: MemoryServer) -> None:
    user, token = new_user(memory_server, "lister")

    async def scenario() -> None:
        async with connect(memory_server, "http", user, token) as session:
            tools = {tool.name: tool for tool in (await session.list_tools()).tools}
        schema = tools[TOOL].input_schema
        assert set(schema["properties"]) == {
            "command",
            "path",
            "file_text",
            "old_str",
            "new_str",
            "insert_line",
            "insert_text",
            "view_range",
            "old_path",
            "new_path",
        }
        assert schema["required"] == ["command"]
        assert "/memories" in (tools[TOOL].description or "")

    anyio.run(scenario)


@pytest.mark.parametrize("transport", ["sse", "http"])
def test_create_view_edit_rename_delete_over_mcp(memory_server: MemoryServer, transport: str) -> None:
    user, token = new_user(memory_server, "mcp")

    async def scenario() -> None:
        async with connect(memory_server, transport, user, token) as session:
            created = ok(
                await call(session, command="create", path="/memories/notes.md", file_text="a\nb\nc\n")
            )
            assert created == "File created successfully at: /memories/notes.md"
            assert ok(await call(session, command="view", path="/memories")) == (
                HEADER.format("/memories") + "\n6B\t/memories\n6B\t/memories/notes.md"
            )
            assert ok(await call(session, command="view", path="/memories/notes.md", view_range=[2, 3])) == (
                "Here's the content of /memories/notes.md with line numbers:\n     2\tb\n     3\tc"
            )
            edited = ok(
                await call(
                    session, command="str_replace", path="/memories/notes.md", old_str="b", new_str="B"
                )
            )
            assert edited.startswith("The memory file has been edited.") and "     2\tB" in edited
            assert ok(
                await call(
                    session, command="insert", path="/memories/notes.md", insert_line=0, insert_text="top"
                )
            ) == ("The file /memories/notes.md has been edited.")
            renamed = ok(
                await call(
                    session, command="rename", old_path="/memories/notes.md", new_path="/memories/x/n.md"
                )
            )
            assert renamed == "Successfully renamed /memories/notes.md to /memories/x/n.md"
            assert ok(await call(session, command="view", path="/memories/x/n.md")).endswith(
                "     1\ttop\n     2\ta\n     3\tB\n     4\tc\n     5\t"
            )
            # Errors reach the model as error results with the reference's text, nothing before it.
            assert failed(await call(session, command="view", path="/memories/notes.md")) == (
                "The path /memories/notes.md does not exist. Please provide a valid path."
            )
            assert failed(
                await call(session, command="create", path="/memories/x/n.md", file_text="again")
            ) == ("File /memories/x/n.md already exists")
            assert failed(await call(session, command="view", path="/memories/../../etc/passwd")) == (
                "Path /memories/../../etc/passwd would escape /memories directory"
            )
            assert failed(await call(session, command="view", path="/etc/passwd")) == (
                "Path must start with /memories, got: /etc/passwd"
            )
            assert (
                ok(await call(session, command="delete", path="/memories/x"))
                == "Successfully deleted /memories/x"
            )
            assert failed(await call(session, command="delete", path="/memories/x")) == (
                "The path /memories/x does not exist"
            )

    anyio.run(scenario)


def test_a_secret_in_a_file_is_redacted_and_the_result_says_so(memory_server: MemoryServer) -> None:
    user, token = new_user(memory_server, "secret")

    async def scenario() -> None:
        async with connect(memory_server, "http", user, token) as session:
            created = ok(
                await call(
                    session, command="create", path="/memories/keys.md", file_text=f"deploy key {SECRET}\n"
                )
            )
            assert created.startswith(
                "File created successfully at: /memories/keys.md\nNote: 1 secret was redacted"
            )
            shown = ok(await call(session, command="view", path="/memories/keys.md"))
        assert SECRET not in shown and "[REDACTED:" in shown

    anyio.run(scenario)
    listed = httpx.get(f"{memory_server.base_url}/api/v1/memories", headers=bearer(token), timeout=30).json()
    assert SECRET not in json.dumps(listed)


# -- files are memories ------------------------------------------------------------------------


def test_a_file_is_found_by_search_memory_and_listed_over_rest_with_its_path(
    memory_server: MemoryServer,
) -> None:
    user, token = new_user(memory_server, "search")
    marker = uuid.uuid4().hex[:8]
    text = f"The deployment runbook lives in the ops wiki under kestrel-{marker}.\n"

    async def scenario() -> str:
        async with connect(memory_server, "http", user, token) as session:
            ok(await call(session, command="create", path="/memories/projects/runbook.md", file_text=text))
            return ok(
                await session.call_tool(
                    "search_memory", {"query": f"where is the deployment runbook kestrel-{marker}"}
                )
            )

    hits = json.loads(anyio.run(scenario))["results"]
    assert hits and hits[0]["memory"] == text
    listed = httpx.get(f"{memory_server.base_url}/api/v1/memories", headers=bearer(token), timeout=30).json()
    [item] = [item for item in listed["items"] if item["id"] == hits[0]["id"]]
    assert item["path"] == "/memories/projects/runbook.md" and item["content"] == text


def test_another_users_token_never_sees_the_files(memory_server: MemoryServer) -> None:
    owner, owner_token = new_user(memory_server, "owner")
    other, other_token = new_user(memory_server, "other")
    created = memory_tool(
        memory_server,
        owner_token,
        {"command": "create", "path": "/memories/private.md", "file_text": "mine\n"},
    )
    assert created.status_code == 200, created.text

    async def scenario() -> None:
        async with connect(memory_server, "http", other, other_token) as session:
            assert failed(await call(session, command="view", path="/memories/private.md")) == (
                "The path /memories/private.md does not exist. Please provide a valid path."
            )
            assert ok(await call(session, command="view", path="/memories")).endswith("\n0B\t/memories")
            # The other user's own file of the same name is theirs alone.
            ok(await call(session, command="create", path="/memories/private.md", file_text="theirs\n"))

    anyio.run(scenario)
    seen = memory_tool(memory_server, other_token, {"command": "view", "path": "/memories/private.md"})
    assert seen.json()["result"].endswith("     1\ttheirs\n     2\t")
    mine = memory_tool(memory_server, owner_token, {"command": "view", "path": "/memories/private.md"})
    assert mine.json()["result"].endswith("     1\tmine\n     2\t")
    # The URL names a user: another user's token cannot act for them.
    forged = httpx.post(
        f"{memory_server.base_url}/api/v1/memory-tool",
        params={"user_id": owner},
        json={"command": "view", "path": "/memories"},
        headers=bearer(other_token),
        timeout=30,
    )
    assert forged.status_code == 403, forged.text


# -- REST ---------------------------------------------------------------------------------------


def test_rest_answers_the_result_text_and_refusals_with_their_status(memory_server: MemoryServer) -> None:
    _, token = new_user(memory_server, "rest")

    def send(**command: Any) -> httpx.Response:
        return memory_tool(memory_server, token, command)

    created = send(command="create", path="/memories/a.md", file_text="one\n")
    assert created.status_code == 200 and created.json() == {
        "result": "File created successfully at: /memories/a.md"
    }
    refusals = [
        (
            send(command="view", path="/memories/b.md"),
            404,
            "The path /memories/b.md does not exist. Please provide a valid path.",
        ),
        (
            send(command="create", path="/memories/a.md", file_text="x"),
            409,
            "File /memories/a.md already exists",
        ),
        (
            send(command="view", path="/memories/%2e%2e/x"),
            422,
            "Path /memories/%2e%2e/x would escape /memories directory",
        ),
        (
            send(command="create", path="/memories/big.md", file_text="x" * (MAX_FILE_BYTES + 1)),
            413,
            f"File /memories/big.md would be {MAX_FILE_BYTES + 1} bytes; "
            f"the maximum is {MAX_FILE_BYTES} (memory_tool.max_file_bytes)",
        ),
        (send(command="frobnicate"), 422, None),
        (
            send(command="str_replace", path="/memories/a.md", old_str="two", new_str="2"),
            422,
            "No replacement was performed, old_str `two` did not appear verbatim in /memories/a.md.",
        ),
    ]
    for response, status, detail in refusals:
        assert response.status_code == status, response.text
        if detail is not None:
            assert response.json()["detail"] == detail
    assert send(command="view", path="/memories").json()["result"].splitlines()[1:] == [
        "4B\t/memories",
        "4B\t/memories/a.md",
    ]
    not_an_object = httpx.post(
        f"{memory_server.base_url}/api/v1/memory-tool", json=["view"], headers=bearer(token)
    )
    assert not_an_object.status_code == 422
    assert (
        httpx.post(
            f"{memory_server.base_url}/api/v1/memory-tool", json={"command": "view", "path": "/memories"}
        ).status_code
        == 401
    )


def test_the_files_per_user_cap(memory_server: MemoryServer) -> None:
    _, token = new_user(memory_server, "cap")
    for number in range(5):
        assert (
            memory_tool(
                memory_server,
                token,
                {"command": "create", "path": f"/memories/{number}.md", "file_text": f"n{number}"},
            ).status_code
            == 200
        )
    refused = memory_tool(
        memory_server, token, {"command": "create", "path": "/memories/5.md", "file_text": "n5"}
    )
    assert refused.status_code == 413 and "memory_tool.max_files" in refused.json()["detail"]
    assert (
        "/memories/5.md"
        not in memory_tool(memory_server, token, {"command": "view", "path": "/memories"}).json()["result"]
    )


# -- the anthropic SDK's tool runner ----------------------------------------------------------


def test_the_sdk_class_with_the_tool_runner(memory_server: MemoryServer) -> None:
    _, token = new_user(memory_server, "sdk")
    script = ToolSequence(
        "memory",
        [
            {"command": "view", "path": "/memories"},
            {"command": "create", "path": "/memories/prefs.md", "file_text": "The user prefers tabs.\n"},
            {
                "command": "str_replace",
                "path": "/memories/prefs.md",
                "old_str": "tabs",
                "new_str": "tabs, width 4",
            },
            {"command": "view", "path": "/memories/missing.md"},
            {"command": "view", "path": "/memories/prefs.md"},
        ],
        "Noted: tabs, width 4.",
    )
    with (
        FakeAnthropic(responder=script) as upstream,
        RemoteMemoryTool(memory_server.base_url, token) as memory,
    ):
        client = anthropic.Anthropic(
            api_key="sk-ant-test-not-real", base_url=upstream.base_url, max_retries=0
        )
        runner = client.beta.messages.tool_runner(
            model="claude-sonnet-4-5",
            max_tokens=512,
            max_iterations=10,
            tools=[memory],
            messages=[{"role": "user", "content": "Remember that I prefer tabs, width 4."}],
        )
        final = runner.until_done()
    assert final.content[0].text == "Noted: tabs, width 4."  # type: ignore[union-attr]
    first = upstream.message_requests[0].body
    assert {"type": "memory_20250818", "name": "memory"} in first["tools"]
    assert script.results == [
        (HEADER.format("/memories") + "\n0B\t/memories", False),
        ("File created successfully at: /memories/prefs.md", False),
        (
            "The memory file has been edited. Here is the snippet showing the change (with line numbers):\n"
            "     1\tThe user prefers tabs, width 4.\n     2\t",
            False,
        ),
        ("The path /memories/missing.md does not exist. Please provide a valid path.", True),
        (
            "Here's the content of /memories/prefs.md with line numbers:\n"
            "     1\tThe user prefers tabs, width 4.\n     2\t",
            False,
        ),
    ]
    listed = httpx.get(f"{memory_server.base_url}/api/v1/memories", headers=bearer(token), timeout=30).json()
    [item] = listed["items"]
    assert (item["path"], item["content"], item["app_name"]) == (
        "/memories/prefs.md",
        "The user prefers tabs, width 4.\n",
        "anthropic-sdk",
    )
