"""Anthropic's memory tool (``memory_20250818``): its commands over memories that are files.

    run_command(command, store) -> str     (the result text the model reads; raises typed errors)

The model sees a directory ``/memories`` and edits it with ``view``, ``create``,
``str_replace``, ``insert``, ``delete`` and ``rename`` (plus ``clear_all_memory``, which the
SDK's base class offers apps). Here a file is a memory whose path is part of its identity
(``memories.path``) and a directory is only a path prefix: it exists while a file is below
it. The commands' semantics and texts, errors included, are those of the ``anthropic`` SDK's
``BetaLocalFilesystemMemoryTool`` (the reference implementation the model is used to), with
three differences a store of memories brings: a file cannot be empty (a memory holds text),
directories are not created on their own (``create`` makes the file, its directories follow),
and a directory's size in a listing is the sum of its files' sizes.

Every write goes through the policy gate (``writes.py``): a secret in the text is masked
before anything is stored, and the result says so. Errors are typed (``errors.py``) and carry
the reference's wording as their message: ``NotFound`` for a path that does not exist,
``Conflict`` for one that does, ``BadInput`` for everything else the model sent wrong,
``TooLarge`` for the caps. Paths are checked by ``policy.memory_paths`` before anything runs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from ...errors import BadInput, Conflict, NotFound
from ...policy.memory_paths import ROOT, is_under, memory_path, relative

#: The reference's line-number column: wide enough for its 999,999-line limit.
MAX_LINES = 999_999
LINE_NUMBER_WIDTH = len(str(MAX_LINES))
COMMANDS = ("view", "create", "str_replace", "insert", "delete", "rename", "clear_all_memory")


@dataclass(frozen=True)
class FileEntry:
    """A file as a listing shows it: no text, its size in bytes of UTF-8."""

    id: str
    path: str  # canonical
    size: int


@dataclass(frozen=True)
class StoredFile:
    id: str
    path: str  # canonical
    text: str

    @property
    def size(self) -> int:
        return len(self.text.encode("utf-8"))


@dataclass(frozen=True)
class Stored:
    """What a write kept: the text as stored (secrets masked) and how many were masked."""

    text: str
    redactions: int


class FileStore(Protocol):
    """One user's memory files (paths canonical, see ``policy.memory_paths``)."""

    def get(self, path: str) -> StoredFile | None: ...

    def files_under(self, directory: str) -> list[FileEntry]:
        """The files strictly below ``directory``, in any order (their texts are not read)."""
        ...

    def create(self, path: str, text: str) -> Stored: ...

    def rewrite(self, file: StoredFile, text: str) -> Stored: ...

    def delete(self, files: Sequence[FileEntry | StoredFile]) -> None: ...

    def move(self, moves: Sequence[tuple[FileEntry | StoredFile, str]]) -> None: ...


def run_command(command: Mapping[str, Any], store: FileStore) -> str:
    """Execute one memory-tool command (the tool's JSON input) and answer its result text."""
    if not isinstance(command, Mapping):
        raise BadInput("the memory tool's input must be a JSON object")
    name = command.get("command")
    if name == "view":
        return view(store, _text(command, "path"), _view_range(command.get("view_range")))
    if name == "create":
        return create(store, _text(command, "path"), _text(command, "file_text"))
    if name == "str_replace":
        new_str = command.get("new_str", "")
        return str_replace(
            store,
            _text(command, "path"),
            _text(command, "old_str"),
            new_str if new_str is not None else "",
        )
    if name == "insert":
        return insert(
            store, _text(command, "path"), _integer(command, "insert_line"), _text(command, "insert_text")
        )
    if name == "delete":
        return delete(store, _text(command, "path"))
    if name == "rename":
        return rename(store, _text(command, "old_path"), _text(command, "new_path"))
    if name == "clear_all_memory":
        return clear_all_memory(store)
    raise BadInput(f"Unknown command: {name}; use one of {', '.join(COMMANDS)}")


def view(store: FileStore, path: str, view_range: tuple[int, int] | None = None) -> str:
    canonical = memory_path(path)
    file = store.get(canonical)
    if file is not None:
        return _numbered(file, path, view_range)
    below = store.files_under(canonical)  # hidden names (a part starting with ".") are left out
    if not below and canonical != ROOT:
        raise NotFound(f"The path {path} does not exist. Please provide a valid path.")
    visible = [
        f for f in below if not any(part.startswith(".") for part in relative(f.path, canonical).split("/"))
    ]
    shown = path.rstrip("/") or path
    lines = [f"{format_size(sum(f.size for f in visible))}\t{shown}"]
    lines += [f"{format_size(size)}\t{shown}/{name}" for size, name in _listing(canonical, visible)]
    header = f"Here're the files and directories up to 2 levels deep in {path}, excluding hidden items:"
    return header + "\n" + "\n".join(lines)


def create(store: FileStore, path: str, file_text: str) -> str:
    canonical = memory_path(path)
    if canonical == ROOT or store.get(canonical) is not None or store.files_under(canonical):
        raise Conflict(f"File {path} already exists")
    _refuse_file_as_directory(store, canonical, path)
    _require_content(file_text, path)
    stored = store.create(canonical, file_text)
    return f"File created successfully at: {path}" + _redaction_note(stored)


def str_replace(store: FileStore, path: str, old_str: str, new_str: str) -> str:
    file = _file(store, path)
    content = file.text
    count = content.count(old_str) if old_str else 0
    if count == 0:
        raise BadInput(
            f"No replacement was performed, old_str `{old_str}` did not appear verbatim in {path}."
        )
    if count > 1:
        lines, start = [], 0
        while (position := content.find(old_str, start)) != -1:
            lines.append(content[:position].count("\n") + 1)
            start = position + 1
        raise BadInput(
            f"No replacement was performed. Multiple occurrences of old_str `{old_str}` in lines: "
            f"{', '.join(map(str, lines))}. Please ensure it is unique"
        )
    changed_line = content[: content.find(old_str)].count("\n")
    new_content = content.replace(old_str, new_str)
    _require_content(new_content, path)
    stored = store.rewrite(file, new_content)
    new_lines = stored.text.split("\n")
    first, last = max(0, changed_line - 2), min(len(new_lines), changed_line + 3)
    snippet = [
        f"{str(number).rjust(LINE_NUMBER_WIDTH)}\t{new_lines[number - 1]}"
        for number in range(first + 1, last + 1)
    ]
    return (
        "The memory file has been edited. Here is the snippet showing the change (with line numbers):\n"
        + "\n".join(snippet)
        + _redaction_note(stored)
    )


def insert(store: FileStore, path: str, insert_line: int, insert_text: str) -> str:
    file = _file(store, path)
    lines = file.text.split("\n")
    if lines[-1] == "":
        lines.pop()  # a trailing newline ends the last line; it does not start another
    if insert_line < 0 or insert_line > len(lines):
        raise BadInput(
            f"Invalid `insert_line` parameter: {insert_line}. "
            f"It should be within the range [0, {len(lines)}]."
        )
    lines.insert(insert_line, insert_text.rstrip("\n"))
    new_content = "\n".join(lines)
    if not new_content.endswith("\n"):
        new_content += "\n"
    _require_content(new_content, path)
    stored = store.rewrite(file, new_content)
    return f"The file {path} has been edited." + _redaction_note(stored)


def delete(store: FileStore, path: str) -> str:
    canonical = memory_path(path)
    if canonical == ROOT:
        raise BadInput("Cannot delete the /memories directory itself")
    file = store.get(canonical)
    doomed: Sequence[FileEntry | StoredFile] = [file] if file is not None else store.files_under(canonical)
    if not doomed:
        raise NotFound(f"The path {path} does not exist")
    store.delete(doomed)
    return f"Successfully deleted {path}"


def rename(store: FileStore, old_path: str, new_path: str) -> str:
    old, new = memory_path(old_path), memory_path(new_path)
    if old == ROOT:
        raise BadInput("Cannot rename the /memories directory itself")
    if new == ROOT or store.get(new) is not None or store.files_under(new):
        raise Conflict(f"The destination {new_path} already exists")
    file = store.get(old)
    moving: Sequence[FileEntry | StoredFile] = [file] if file is not None else store.files_under(old)
    if not moving:
        raise NotFound(f"The path {old_path} does not exist")
    if file is None and is_under(new, old):
        raise BadInput(f"Cannot move the directory {old_path} into itself ({new_path})")
    _refuse_file_as_directory(store, new, new_path)
    moves = [(f, new if file is not None else memory_path(f"{new}/{relative(f.path, old)}")) for f in moving]
    store.move(moves)
    return f"Successfully renamed {old_path} to {new_path}"


def clear_all_memory(store: FileStore) -> str:
    """Every file of the user goes (their other memories stay)."""
    files = store.files_under(ROOT)
    if files:
        store.delete(files)
    return "All memory cleared"


def format_size(size: int) -> str:
    """Sizes as the reference lists them: ``0B``, ``512B``, ``1.5K``, ``2M``."""
    if size == 0:
        return "0B"
    units = ["B", "K", "M", "G"]
    index = min((size.bit_length() - 1) // 10, len(units) - 1)
    scaled = size / (1024**index)
    return f"{int(scaled)}{units[index]}" if scaled == int(scaled) else f"{scaled:.1f}{units[index]}"


# -- helpers -------------------------------------------------------------------------------------


def _numbered(file: StoredFile, path: str, view_range: tuple[int, int] | None) -> str:
    lines = file.text.split("\n")
    if len(lines) > MAX_LINES:
        raise BadInput(f"File {path} exceeds maximum line limit of 999,999 lines.")
    start = 1
    if view_range is not None:
        first = max(1, view_range[0]) - 1
        last = len(lines) if view_range[1] == -1 else view_range[1]
        lines, start = lines[first:last], first + 1
    numbered = [f"{str(number).rjust(LINE_NUMBER_WIDTH)}\t{line}" for number, line in enumerate(lines, start)]
    return f"Here's the content of {path} with line numbers:\n" + "\n".join(numbered)


def _listing(directory: str, files: Sequence[FileEntry]) -> list[tuple[int, str]]:
    """(size, name below ``directory``) up to two levels deep, each directory followed by its
    contents, names sorted at every level (as the reference walks)."""
    tree: dict[str, Any] = {}
    for file in files:
        parts = relative(file.path, directory).split("/")
        node = tree
        for part in parts[:-1]:
            node = node.setdefault(part + "/", {})
        node[parts[-1]] = file.size

    def size_of(node: Any) -> int:
        return node if isinstance(node, int) else sum(size_of(child) for child in node.values())

    entries: list[tuple[int, str]] = []

    def walk(node: dict[str, Any], prefix: str, depth: int) -> None:
        for name in sorted(node, key=lambda key: key.rstrip("/")):
            child = node[name]
            entries.append((size_of(child), prefix + name))
            if isinstance(child, dict) and depth < 2:
                walk(child, prefix + name, depth + 1)

    walk(tree, "", 1)
    return entries


def _file(store: FileStore, path: str) -> StoredFile:
    canonical = memory_path(path)
    file = store.get(canonical)
    if file is not None:
        return file
    if canonical == ROOT or store.files_under(canonical):
        raise BadInput(f"The path {path} is not a file.")
    raise NotFound(f"The path {path} does not exist. Please provide a valid path.")


def _refuse_file_as_directory(store: FileStore, canonical: str, path: str) -> None:
    """A file cannot be below another file: ``/memories/a.md/b`` when ``/memories/a.md`` is one."""
    parent = canonical.rsplit("/", 1)[0]
    while parent != ROOT:
        if store.get(parent) is not None:
            raise Conflict(f"Cannot create {path}: {parent} is a file, not a directory")
        parent = parent.rsplit("/", 1)[0]


def _require_content(text: str, path: str) -> None:
    if not text.strip():
        raise BadInput(f"File {path} would be empty: a memory file must hold some text (delete it instead)")


def _redaction_note(stored: Stored) -> str:
    if not stored.redactions:
        return ""
    count = f"{stored.redactions} secret" + ("s were" if stored.redactions > 1 else " was")
    return (
        f"\nNote: {count} redacted before storing; the file holds [REDACTED:<kind>] markers in "
        "their place, never the secret itself."
    )


def _text(command: Mapping[str, Any], field: str) -> str:
    value = command.get(field)
    if not isinstance(value, str):
        raise BadInput(
            f"Missing required parameter `{field}` for command {command.get('command')}"
            if value is None
            else f"Parameter `{field}` must be a string"
        )
    return value


def _integer(command: Mapping[str, Any], field: str) -> int:
    value = command.get(field)
    if isinstance(value, bool) or not isinstance(value, int):
        raise BadInput(
            f"Missing required parameter `{field}` for command {command.get('command')}"
            if value is None
            else f"Parameter `{field}` must be an integer"
        )
    return value


def _view_range(value: object) -> tuple[int, int] | None:
    if value is None:
        return None
    if (
        not isinstance(value, (list, tuple))
        or len(value) != 2
        or not all(isinstance(v, int) and not isinstance(v, bool) for v in value)
    ):
        raise BadInput("Parameter `view_range` must be two integers: [start_line, end_line] (-1: to the end)")
    return int(value[0]), int(value[1])
