"""How the suite runs in parallel: two pytest-xdist workers, a whole test file at a time.

Most of the suite's time is spent starting processes (``ccmem serve``, ``ccmem`` commands,
PostgreSQL, the native stack) and waiting for them; two workers keep both cores of a CI machine
busy. A test file goes to one worker as a whole (``--dist loadfile``) because most files share
one server among their tests (a module-scoped fixture): split across workers, each would start
its own.

README's command (``.venv/bin/python -m pytest``) gets this by default; ``-n N`` chooses
another number of workers, ``-n 0`` or ``-p no:xdist`` runs serially, and so do ``--pdb`` (pdb
needs the terminal) and a run of one file (it would go to one worker anyway). It is set here
rather than in ``addopts`` so that ``-p no:xdist`` still parses.
"""

from __future__ import annotations

import pytest

WORKERS = 2

#: The files that take longest, longest first: the workers take files in collection order, and
#: a long file taken last would run alone at the end. Every other file keeps pytest's order
#: after these. Only an ordering hint: a stale entry costs time, never a test. Refreshed from
#: the per-file sums of a CI run's junit.xml (every file that took 7.5 s or more).
LONGEST_FIRST = (
    "test_cli.py",
    "test_package.py",
    "test_full_disk.py",
    "test_capture_proxy.py",
    "test_ui_browser.py",
    "test_native_stack.py",
    "test_fault_kill9.py",
    "test_ui_browser_organise.py",
    "test_redact.py",
    "test_e2e_connect.py",
    "test_consent.py",
    "test_ui_process.py",
    "test_e2e_plugin.py",
    "test_openmemory.py",
    "test_concurrent_writes.py",
    "test_e2e_clients.py",
    "test_storage.py",
    "test_engine.py",
    "test_oauth.py",
    "test_smoke.py",
    "test_client.py",
    "test_rest_memories.py",
    "test_reconcile.py",
    "test_retention.py",
    "test_qdrant_server.py",
    "test_bench_load.py",
    "test_gate.py",
    "test_e2e_memory_tool.py",
    "test_manager.py",
    "test_hygiene.py",
    "test_claude_import.py",
    "test_e2e_hooks.py",
    "test_json_depth.py",
    "test_rest_config_backup.py",
    "test_index_build.py",
    "test_memory_tool_server.py",
    "test_scopes.py",
)


def default_to_workers(config: pytest.Config) -> None:
    """Turn on ``-n WORKERS --dist loadfile`` unless the command line chose otherwise."""
    if not config.pluginmanager.hasplugin("xdist"):  # -p no:xdist, or not installed
        return
    if hasattr(config, "workerinput"):  # a worker: it runs tests, it must not start workers
        return
    option = config.option
    if option.numprocesses is not None or option.dist != "no" or getattr(option, "tx", None):
        return
    if config.getoption("usepdb", False) or config.getoption("collectonly", False):
        return
    files = {arg.split("::")[0] for arg in config.args}
    if len(files) == 1 and files.pop().endswith(".py"):
        return  # one file: it would run on one worker anyway
    option.numprocesses = WORKERS
    option.dist = "loadfile"
    # Keep the order below: xdist would otherwise start with the files that have most tests.
    option.loadscopereorder = False


def longest_first(items: list[pytest.Item]) -> None:
    """Put the files of :data:`LONGEST_FIRST` first, in its order (a stable sort)."""
    rank = {name: index for index, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))
