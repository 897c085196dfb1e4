"""``kill -9`` during each operation that writes or deletes 150 memories, once each: after the
restart's reconciliation, SQL and the vector store agree and no acknowledged write is lost.
(bench/faults/kill9.py runs 20 random rounds of the same harness.)"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.kill9 import OPERATIONS, Kill9


@pytest.mark.timeout(900)
@pytest.mark.integration  # starts and kills its own server
def test_a_killed_server_restarts_consistent_after_every_operation(tmp_path: Path) -> None:
    with Kill9(tmp_path, seed=7) as fault:
        for operation in OPERATIONS:
            outcome = fault.round(operation)
            assert (outcome.half_deleted, outcome.orphans, outcome.acknowledged_lost) == (0, 0, 0), (
                outcome,
                fault.server.log(),
            )
        summary = fault.summary()
    assert summary["rounds"] == len(OPERATIONS)
    assert summary["half_deleted"] == summary["orphans"] == summary["acknowledged_lost"] == 0, summary
