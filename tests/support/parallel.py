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

from . import durations

WORKERS = 2

#: The files that take longest, longest first: the workers take files in collection order, and
#: a long file taken last would run alone at the end. Measured, not kept by hand:
#: tests/durations.json, written from a full run's junit.xml by tests/support/durations.py.
LONGEST_FIRST = tuple(durations.longest_first(durations.load()))


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
