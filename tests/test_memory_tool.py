"""Anthropic's memory tool, in-process: every path the tool refuses (``policy/memory_paths.py``)
and every command (``memories/memory_files/commands.py``) against the real store (SQLite, the embedded
vector store, the gate), with the reference implementation's texts.

One store for the module; every test works as its own fresh user.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select, update

from claude_code_memory.config import load_settings
from claude_code_memory.db.models import App, User
from claude_code_memory.errors import BadInput, Conflict, Forbidden, MemoryStackError, NotFound, TooLarge
from claude_code_memory.memories.memory_files.commands import format_size
from claude_code_memory.memories.portability.backup import read_archive
from claude_code_memory.memories.server_parts import ServerParts
from claude_code_memory.memories.service import MemoryService
from claude_code_memory.policy.memory_paths import (
    MAX_DEPTH,
    MAX_NAME_BYTES,
    MAX_PATH_CHARS,
    PathRefused,
    memory_path,
)
from claude_code_memory.search.request import SearchRequest

HEADER = "Here're the files and directories up to 2 levels deep in {}, excluding hidden items:"
MAX_FILE_BYTES = 2000
SECRET = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"

# -- paths -------------------------------------------------------------------------------------

ACCEPTED = [
    ("/memories", "/memories"),
    ("/memories/", "/memories"),
    ("/memories/notes.md", "/memories/notes.md"),
    ("/memories/projects/", "/memories/projects"),
    ("/memories/a b/c-d_e.f.md", "/memories/a b/c-d_e.f.md"),
    ("/memories/.hidden", "/memories/.hidden"),
    ("/memories/...", "/memories/..."),  # three dots name a file, not a parent
    ("/memories/cafe\u0301.md", "/memories/caf\u00e9.md"),  # one spelling: NFC
    ("/memories/日本語.md", "/memories/日本語.md"),
    ("/memories/" + "n" * MAX_NAME_BYTES, "/memories/" + "n" * MAX_NAME_BYTES),
]

ESCAPES = [
    "/memories/..",
    "/memories/.",
    "/memories/../etc/passwd",
    "/memories/a/../../etc/passwd",
    "/memories/a/../b",  # stays inside, but a second spelling of /memories/b
    "/memories/./a",
    "/memories//a",
    "/memories/a\\b",
    "/memories/..\\..\\etc",
    "/memories/%2e%2e/etc",
    "/memories/%2E%2E%2Fetc",
    "/memories/a%2fb",
    "/memories/%252e%252e/etc",  # encoded twice
    "/memories/a%5cb",
    "/memories/note%00.md",
    "/memories/\uff0e\uff0e\uff0fetc",  # fullwidth "../"
    "/memories/\uff0e\uff0e/etc",  # fullwidth ".."
    "/memories/a\uff0fb",  # fullwidth solidus: NFKC makes it "/"
    "/memories/a\uff3cb",  # fullwidth reverse solidus: "\\"
    "/memories/\u2024\u2024/etc",  # one-dot leaders: ".."
    "/memories/\ufe52\ufe52/etc",  # small full stops: ".."
    "/memories/\uff05\uff12\uff45\uff05\uff12\uff45/etc",  # fullwidth "%2e%2e"
]

OTHERWISE_REFUSED = [
    ("", "Path must start with /memories, got: "),
    ("memories/a.md", "Path must start with /memories, got: memories/a.md"),
    ("/memoriesX/a.md", "Path must start with /memories, got: /memoriesX/a.md"),
    ("/etc/passwd", "Path must start with /memories, got: /etc/passwd"),
    ("/tmp/memories/a", "Path must start with /memories, got: /tmp/memories/a"),
    ("/memories/a\x00b", "Path /memories/a\\x00b contains a control or invisible character"),
    ("/memories/a\nb", "Path /memories/a\\nb contains a control or invisible character"),
    ("/memories/a\tb", "Path /memories/a\\tb contains a control or invisible character"),
    ("/memories/a\x7fb", "Path /memories/a\\x7fb contains a control or invisible character"),
    ("/memories/\u202egnp.exe", "Path /memories/\\u202egnp.exe contains a control or invisible character"),
    ("/memories/a\u200db", "Path /memories/a\\u200db contains a control or invisible character"),
    ("/memories/a\u2028b", "Path /memories/a\\u2028b contains a control or invisible character"),
    ("/memories/" + "n" * (MAX_NAME_BYTES + 1), "has a name longer than 255 bytes"),
    ("/memories/" + "é" * 128, "has a name longer than 255 bytes"),  # 256 bytes of UTF-8
    ("/memories" + "/d" * (MAX_DEPTH + 1), "is nested deeper than 16 directories"),
    ("/memories/" + "d/" * 300 + "x", f"at most {MAX_PATH_CHARS} characters"),
]


@pytest.mark.parametrize(("raw", "canonical"), ACCEPTED)
def test_paths_accepted_and_their_one_spelling(raw: str, canonical: str) -> None:
    assert memory_path(raw) == canonical


@pytest.mark.parametrize("raw", ESCAPES)
def test_traversal_in_every_spelling_is_refused_with_the_reference_text(raw: str) -> None:
    with pytest.raises(PathRefused) as refused:
        memory_path(raw)
    assert refused.value.message == f"Path {raw} would escape /memories directory"


@pytest.mark.parametrize(("raw", "message"), OTHERWISE_REFUSED)
def test_paths_outside_or_unprintable_or_too_long_are_refused(raw: str, message: str) -> None:
    with pytest.raises(PathRefused) as refused:
        memory_path(raw)
    assert message in refused.value.message


def test_a_path_that_is_not_a_string_is_refused() -> None:
    for raw in (None, 5, ["/memories"]):
        with pytest.raises(PathRefused):
            memory_path(raw)


def test_sizes_are_listed_as_the_reference_lists_them() -> None:
    assert [format_size(n) for n in (0, 1, 1023, 1024, 1536, 10 * 1024 * 1024, 1024**4)] == [
        "0B",
        "1B",
        "1023B",
        "1K",
        "1.5K",
        "10M",
        "1024G",
    ]


# -- commands against the real store -----------------------------------------------------------


@pytest.fixture(scope="module")
def service_overrides() -> dict[str, object]:
    return {"memory_tool.max_file_bytes": MAX_FILE_BYTES, "memory_tool.max_files": 20}


class Tool:
    """One user's memory tool: ``tool(command="view", path=...)`` answers the result text."""

    def __init__(self, service: MemoryService) -> None:
        self.service = service
        self.user = f"user-{uuid.uuid4().hex[:10]}"

    def __call__(self, **command: Any) -> str:
        return self.service.memory_tool(user_id=self.user, app_name="test-app", command=command)

    def refused(self, error: type[MemoryStackError], **command: Any) -> str:
        before = self.snapshot()
        with pytest.raises(error) as raised:
            self(**command)
        assert self.snapshot() == before, "a refused command changed something"
        return raised.value.message

    def snapshot(self) -> list[tuple[str, str, str]]:
        """Every file of the user: (memory id, path, text)."""
        items = self.service.reads.list_memories(user_id=self.user, app_name="inspector")
        by_id = {item["id"]: item["memory"] for item in items}
        return sorted(
            (
                (memory_id, self.service.reads.get(memory_id, self.user).path or "", text)
                for memory_id, text in by_id.items()
            ),
            key=lambda file: file[1],
        )

    def file_id(self, path: str) -> str:
        [memory_id] = [memory_id for memory_id, file_path, _ in self.snapshot() if file_path == path]
        return memory_id


@pytest.fixture
def tool(service: MemoryService) -> Tool:
    return Tool(service)


def test_view_of_an_empty_directory_and_of_what_does_not_exist(tool: Tool) -> None:
    assert tool(command="view", path="/memories") == HEADER.format("/memories") + "\n0B\t/memories"
    assert tool.refused(NotFound, command="view", path="/memories/none.md") == (
        "The path /memories/none.md does not exist. Please provide a valid path."
    )
    assert tool.refused(NotFound, command="view", path="/memories/none/") == (
        "The path /memories/none/ does not exist. Please provide a valid path."
    )


def test_view_lists_two_levels_with_sizes_hidden_items_left_out(tool: Tool) -> None:
    files = {
        "/memories/b.md": "b" * 1536,
        "/memories/a/one.md": "1\n",
        "/memories/a/deep/two.md": "22\n",
        "/memories/a/deep/deeper/three.md": "333\n",
        "/memories/.secret/x.md": "hidden\n",
        "/memories/a/.hidden.md": "hidden\n",
    }
    for path, text in files.items():
        tool(command="create", path=path, file_text=text)
    assert tool(command="view", path="/memories") == "\n".join(
        [
            HEADER.format("/memories"),
            "1.5K\t/memories",  # the visible files: 1536 + 2 + 3 + 4 bytes = 1545
            "9B\t/memories/a/",
            "7B\t/memories/a/deep/",
            "2B\t/memories/a/one.md",
            "1.5K\t/memories/b.md",
        ]
    )
    assert tool(command="view", path="/memories/a/") == "\n".join(
        [
            HEADER.format("/memories/a/"),
            "9B\t/memories/a",
            "7B\t/memories/a/deep/",
            "4B\t/memories/a/deep/deeper/",
            "3B\t/memories/a/deep/two.md",
            "2B\t/memories/a/one.md",
        ]
    )


def test_view_of_a_file_with_line_numbers_and_a_range(tool: Tool) -> None:
    tool(command="create", path="/memories/f.md", file_text="one\ntwo\nthree\nfour")
    numbered = ["     1\tone", "     2\ttwo", "     3\tthree", "     4\tfour"]
    head = "Here's the content of /memories/f.md with line numbers:\n"
    assert tool(command="view", path="/memories/f.md") == head + "\n".join(numbered)
    assert tool(command="view", path="/memories/f.md", view_range=[2, 3]) == head + "\n".join(numbered[1:3])
    assert tool(command="view", path="/memories/f.md", view_range=[3, -1]) == head + "\n".join(numbered[2:])
    assert tool(command="view", path="/memories/f.md", view_range=[0, 1]) == head + numbered[0]
    for bad in ([1], [1, "2"], "1-2", [True, 2]):
        assert "view_range" in tool.refused(BadInput, command="view", path="/memories/f.md", view_range=bad)


def test_create_and_what_it_refuses(tool: Tool) -> None:
    assert tool(command="create", path="/memories/dir/a.md", file_text="alpha\n") == (
        "File created successfully at: /memories/dir/a.md"
    )
    assert tool.refused(Conflict, command="create", path="/memories/dir/a.md", file_text="again") == (
        "File /memories/dir/a.md already exists"
    )
    assert tool.refused(Conflict, command="create", path="/memories/dir", file_text="a directory") == (
        "File /memories/dir already exists"
    )
    assert tool.refused(Conflict, command="create", path="/memories", file_text="root") == (
        "File /memories already exists"
    )
    assert "is a file, not a directory" in tool.refused(
        Conflict, command="create", path="/memories/dir/a.md/b.md", file_text="below a file"
    )
    assert "would be empty" in tool.refused(
        BadInput, command="create", path="/memories/e.md", file_text=" \n"
    )
    assert "file_text" in tool.refused(BadInput, command="create", path="/memories/e.md")
    # Two files may say the same thing: the path is part of a file's identity.
    tool(command="create", path="/memories/dir/b.md", file_text="alpha\n")
    assert [path for _, path, _ in tool.snapshot()] == ["/memories/dir/a.md", "/memories/dir/b.md"]


def test_str_replace_edits_the_memory_in_place_and_reembeds_it(tool: Tool, service: MemoryService) -> None:
    tool(command="create", path="/memories/s.md", file_text="l1\nl2\nthe colour is teal\nl4\nl5\nl6\n")
    memory_id = tool.file_id("/memories/s.md")
    assert tool(command="str_replace", path="/memories/s.md", old_str="teal", new_str="vermilion") == (
        "The memory file has been edited. Here is the snippet showing the change (with line numbers):\n"
        "     1\tl1\n     2\tl2\n     3\tthe colour is vermilion\n     4\tl4\n     5\tl5"
    )
    assert tool.file_id("/memories/s.md") == memory_id  # an update of the memory, not a new one
    asked = SearchRequest(user_id=tool.user, app_name="test-app", query="vermilion colour", limit=1)
    hits = service.reads.search(asked)
    assert hits[0]["id"] == memory_id and "vermilion" in hits[0]["memory"]


def test_str_replace_refusals(tool: Tool) -> None:
    tool(command="create", path="/memories/r.md", file_text="x\ny\nx\n")
    tool(command="create", path="/memories/d/inner.md", file_text="inner\n")
    assert tool.refused(
        BadInput, command="str_replace", path="/memories/r.md", old_str="zz", new_str="q"
    ) == ("No replacement was performed, old_str `zz` did not appear verbatim in /memories/r.md.")
    assert tool.refused(BadInput, command="str_replace", path="/memories/r.md", old_str="x", new_str="q") == (
        "No replacement was performed. Multiple occurrences of old_str `x` in lines: 1, 3. "
        "Please ensure it is unique"
    )
    assert tool.refused(
        NotFound, command="str_replace", path="/memories/no.md", old_str="x", new_str="q"
    ) == ("The path /memories/no.md does not exist. Please provide a valid path.")
    assert tool.refused(BadInput, command="str_replace", path="/memories/d", old_str="x", new_str="q") == (
        "The path /memories/d is not a file."
    )
    assert "would be empty" in tool.refused(
        BadInput, command="str_replace", path="/memories/d/inner.md", old_str="inner\n", new_str=""
    )


def test_insert_within_the_bounds(tool: Tool) -> None:
    tool(command="create", path="/memories/i.md", file_text="a\nb")
    assert tool(command="insert", path="/memories/i.md", insert_line=0, insert_text="top\n") == (
        "The file /memories/i.md has been edited."
    )
    tool(command="insert", path="/memories/i.md", insert_line=3, insert_text="end")
    assert tool(command="view", path="/memories/i.md").split("\n")[1:] == [
        "     1\ttop",
        "     2\ta",
        "     3\tb",
        "     4\tend",
        "     5\t",
    ]
    for line in (-1, 5):
        assert tool.refused(
            BadInput, command="insert", path="/memories/i.md", insert_line=line, insert_text="x"
        ) == (f"Invalid `insert_line` parameter: {line}. It should be within the range [0, 4].")
    assert "insert_line" in tool.refused(
        BadInput, command="insert", path="/memories/i.md", insert_line="1", insert_text="x"
    )
    assert tool.refused(
        NotFound, command="insert", path="/memories/x.md", insert_line=0, insert_text="x"
    ) == ("The path /memories/x.md does not exist. Please provide a valid path.")


def test_delete_a_file_a_directory_and_never_the_root(tool: Tool) -> None:
    for path in ("/memories/keep.md", "/memories/d/a.md", "/memories/d/e/b.md", "/memories/dd/c.md"):
        tool(command="create", path=path, file_text=f"{path}\n")
    assert tool(command="delete", path="/memories/d") == "Successfully deleted /memories/d"
    assert [path for _, path, _ in tool.snapshot()] == ["/memories/dd/c.md", "/memories/keep.md"]
    assert tool(command="delete", path="/memories/keep.md") == "Successfully deleted /memories/keep.md"
    assert tool.refused(NotFound, command="delete", path="/memories/keep.md") == (
        "The path /memories/keep.md does not exist"
    )
    assert tool.refused(BadInput, command="delete", path="/memories") == (
        "Cannot delete the /memories directory itself"
    )
    # A deleted file's path is free again.
    assert tool(command="create", path="/memories/keep.md", file_text="new\n").startswith("File created")


def test_rename_a_file_and_a_directory(tool: Tool) -> None:
    tool(command="create", path="/memories/a.md", file_text="a\n")
    tool(command="create", path="/memories/p/x.md", file_text="x\n")
    tool(command="create", path="/memories/p/q/y.md", file_text="y\n")
    memory_id = tool.file_id("/memories/a.md")
    assert tool(command="rename", old_path="/memories/a.md", new_path="/memories/n/b.md") == (
        "Successfully renamed /memories/a.md to /memories/n/b.md"
    )
    assert tool.file_id("/memories/n/b.md") == memory_id
    tool(command="rename", old_path="/memories/p", new_path="/memories/r/p2")
    assert [path for _, path, _ in tool.snapshot()] == [
        "/memories/n/b.md",
        "/memories/r/p2/q/y.md",
        "/memories/r/p2/x.md",
    ]
    assert tool.refused(
        Conflict, command="rename", old_path="/memories/n/b.md", new_path="/memories/r/p2/x.md"
    ) == ("The destination /memories/r/p2/x.md already exists")
    assert tool.refused(Conflict, command="rename", old_path="/memories/n/b.md", new_path="/memories/r") == (
        "The destination /memories/r already exists"
    )
    assert tool.refused(NotFound, command="rename", old_path="/memories/gone", new_path="/memories/z") == (
        "The path /memories/gone does not exist"
    )
    assert tool.refused(BadInput, command="rename", old_path="/memories", new_path="/memories/z") == (
        "Cannot rename the /memories directory itself"
    )
    assert "into itself" in tool.refused(
        BadInput, command="rename", old_path="/memories/r", new_path="/memories/r/inside"
    )
    assert tool.refused(
        BadInput, command="rename", old_path="/memories/n/b.md", new_path="/memories/../b.md"
    ) == ("Path /memories/../b.md would escape /memories directory")


def test_clear_all_memory_removes_the_files_and_keeps_other_memories(
    tool: Tool, service: MemoryService
) -> None:
    tool(command="create", path="/memories/one.md", file_text="one\n")
    tool(command="create", path="/memories/d/two.md", file_text="two\n")
    service.writes.add_memory(user_id=tool.user, app_name="test-app", text="a memory that is not a file")
    assert tool(command="clear_all_memory") == "All memory cleared"
    assert tool(command="view", path="/memories") == HEADER.format("/memories") + "\n0B\t/memories"
    assert [text for _, _, text in tool.snapshot()] == ["a memory that is not a file"]


def test_a_secret_is_redacted_and_the_result_says_so(tool: Tool) -> None:
    created = tool(command="create", path="/memories/env.md", file_text=f"token {SECRET}\n")
    assert created == (
        "File created successfully at: /memories/env.md\nNote: 1 secret was redacted before storing; "
        "the file holds [REDACTED:<kind>] markers in their place, never the secret itself."
    )
    edited = tool(
        command="str_replace", path="/memories/env.md", old_str="token ", new_str=f"old {SECRET} new "
    )
    assert "Note: 1 secret was redacted" in edited
    assert SECRET not in str(tool.snapshot()) and "[REDACTED:github_token]" in tool(
        command="view", path="/memories/env.md"
    )
    assert "holds a secret" in tool.refused(
        BadInput, command="create", path=f"/memories/{SECRET}.md", file_text="x"
    )


def test_the_size_cap_refuses_and_changes_nothing(tool: Tool) -> None:
    assert tool.refused(
        TooLarge, command="create", path="/memories/big.md", file_text="x" * (MAX_FILE_BYTES + 1)
    ) == (
        f"File /memories/big.md would be {MAX_FILE_BYTES + 1} bytes; the maximum is {MAX_FILE_BYTES} "
        "(memory_tool.max_file_bytes)"
    )
    tool(command="create", path="/memories/big.md", file_text="x" * (MAX_FILE_BYTES - 10) + "\nEND")
    assert "memory_tool.max_file_bytes" in tool.refused(
        TooLarge, command="str_replace", path="/memories/big.md", old_str="END", new_str="E" * 20
    )


def test_bad_commands_change_nothing(tool: Tool) -> None:
    assert tool.refused(BadInput, command="format_disk").startswith("Unknown command: format_disk")
    assert "path" in tool.refused(BadInput, command="view")
    assert "path" in tool.refused(BadInput, command="create", path=5, file_text="x")
    assert "old_str" in tool.refused(BadInput, command="str_replace", path="/memories/a.md")


def test_a_file_edited_as_a_memory_stays_the_file(tool: Tool, service: MemoryService) -> None:
    """The UI and REST edit a file like any memory: it keeps its path and its id."""
    tool(command="create", path="/memories/ui.md", file_text="before\n")
    memory_id = tool.file_id("/memories/ui.md")
    service.writes.update_memory(tool.user, memory_id, "after\n")
    assert tool(command="view", path="/memories/ui.md").endswith("     1\tafter\n     2\t")
    service.states.delete_memories([memory_id], user_id=tool.user)
    assert tool(command="view", path="/memories") == HEADER.format("/memories") + "\n0B\t/memories"


def test_files_are_exported_and_imported_with_their_paths(tool: Tool, service: MemoryService) -> None:
    tool(command="create", path="/memories/exported/a.md", file_text="exported file\n")
    service.writes.add_memory(user_id=tool.user, app_name="test-app", text="exported plain memory")
    archive = service.backup.export_archive(tool.user)
    records = read_archive(archive, 10_000_000)
    assert sorted((r.path or "", r.content) for r in records) == [
        ("", "exported plain memory"),
        ("/memories/exported/a.md", "exported file\n"),
    ]
    other = Tool(service)
    service.backup.import_archive(
        other.user, archive, mode="skip", changed_by=other.user, max_bytes=10_000_000
    )
    assert other(command="view", path="/memories/exported/a.md").endswith("     1\texported file\n     2\t")
    again = service.backup.import_archive(
        other.user, archive, mode="skip", changed_by=other.user, max_bytes=10_000_000
    )
    assert again.skipped == 2  # the file is known by its path, the memory by its text


@pytest.mark.postgres
def test_the_commands_on_postgresql(postgres_url: str, tmp_path: Path) -> None:
    """The same store on PostgreSQL: sizes from the database in bytes (not characters), the
    path index, renames and deletes."""
    settings = load_settings(
        config_path=None,
        environ={},
        overrides={"server.data_dir": str(tmp_path / "data"), "storage.database_url": postgres_url},
    )
    parts = ServerParts(settings)
    try:
        tool = Tool(parts.service)
        tool(command="create", path="/memories/é/ü.md", file_text="ünïcödé\n")  # 8 characters, 12 bytes
        tool(command="create", path="/memories/b.md", file_text="b\\x\n")  # a backslash stays one byte
        assert tool(command="view", path="/memories") == "\n".join(
            [
                HEADER.format("/memories"),
                "16B\t/memories",
                "4B\t/memories/b.md",
                "12B\t/memories/é/",
                "12B\t/memories/é/ü.md",
            ]
        )
        assert tool.refused(Conflict, command="create", path="/memories/b.md", file_text="again") == (
            "File /memories/b.md already exists"
        )
        tool(command="rename", old_path="/memories/é", new_path="/memories/e")
        tool(command="delete", path="/memories/b.md")
        assert [path for _, path, _ in tool.snapshot()] == ["/memories/e/ü.md"]
    finally:
        parts.close()


def test_a_paused_app_changes_no_file(tool: Tool, service: MemoryService) -> None:
    tool(command="create", path="/memories/p.md", file_text="kept\n")
    with service.database.session() as session:
        session.execute(
            update(App)
            .where(
                App.name == "test-app",
                App.owner_id == select(User.id).where(User.user_id == tool.user).scalar_subquery(),
            )
            .values(is_active=False)
        )
    paused = "App test-app is currently paused"
    assert paused in tool.refused(Forbidden, command="create", path="/memories/q.md", file_text="x")
    assert paused in tool.refused(
        Forbidden, command="str_replace", path="/memories/p.md", old_str="kept", new_str="x"
    )
    assert paused in tool.refused(
        Forbidden, command="insert", path="/memories/p.md", insert_line=0, insert_text="x"
    )
    assert paused in tool.refused(
        Forbidden, command="rename", old_path="/memories/p.md", new_path="/memories/r.md"
    )
    assert paused in tool.refused(Forbidden, command="delete", path="/memories/p.md")
    assert paused in tool.refused(Forbidden, command="view", path="/memories/p.md")  # as every read is
