"""Which workloads a pass declares VM objects for (operator mode), from the previous pass's row."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from greenops.common.clock import stamp
from greenops.placing.declared import DECLARED_AHEAD, objects_declared

NOW = datetime(2030, 1, 1, 12, tzinfo=UTC)


def row(phase: str | None, next_change: datetime | None = None) -> dict:
    return {"workload": "etl", "phase": phase, "nextChangeAt": stamp(next_change) if next_change else None}


@pytest.mark.parametrize(
    ("previous", "declared"),
    [
        (None, None),  # no row: this pass's decision says
        (row(None), None),
        (row("Scheduled", NOW + timedelta(hours=3)), False),  # waiting: no ConfigGroup
        (row("Scheduled", NOW + DECLARED_AHEAD + timedelta(seconds=1)), False),
        (row("Scheduled", NOW + DECLARED_AHEAD), True),  # the gate is near: declared ahead of it
        (row("Scheduled", NOW - timedelta(minutes=3)), True),  # overdue (held or late): declared
        (row("Scheduled"), True),  # a Scheduled row without a gate is not guessed at
        (row("Provisioning", NOW + timedelta(hours=1)), True),
        (row("Running", NOW + timedelta(hours=1)), True),
        (row("Completed"), False),  # the pass that recorded it deleted the objects
        (row("Failed"), False),
    ],
)
def test_objects_are_declared_only_while_the_workload_can_have_them(previous, declared):
    assert objects_declared(previous, NOW) is declared
