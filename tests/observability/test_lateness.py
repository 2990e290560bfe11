"""The record's own view of lateness, end to end on the real scheduler: with no reconciler running, a
reservation's start passes on the simulated clock while it is still Scheduled; the gauges say so,
with how late, and return to 0 once its phase is reported."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import httpx
import pytest

from greenops.common.clock import set_clock_file
from tests.support.bookings import booking_due_now
from tests.support.scrape import scrape

pytestmark = pytest.mark.integration

OVERDUE = "greenops_scheduler_overdue_gates"
OLDEST = "greenops_scheduler_oldest_overdue_gate_seconds"


def test_a_start_passed_while_scheduled_shows_until_its_phase_is_reported(tmp_path: Path):
    with booking_due_now(tmp_path) as due:
        sched, reader, headers, t0, clock = due.scheduler, due.reader, due.writer, due.t0, due.clock
        at_start = scrape(sched.url, reader)
        assert at_start.by(OVERDUE, "path") == {"pulumi": 0, "cluster": 0, "api": 0}

        set_clock_file(clock, t0 + timedelta(minutes=10))  # nobody opened the gate
        late = scrape(sched.url, reader)
        assert late.by(OVERDUE, "path") == {"pulumi": 1, "cluster": 0, "api": 0}
        assert late.by(OLDEST, "path") == {"pulumi": 600, "cluster": 0, "api": 0}

        set_clock_file(clock, t0 + timedelta(minutes=15))
        assert scrape(sched.url, reader).value(OLDEST, path="pulumi") == 900

        # a reconciler reports the gate opened: lateness is over
        patched = httpx.patch(
            f"{sched.url}/reservations/team-a/etl", json={"phase": "Provisioning"}, headers=headers, timeout=15
        )
        assert patched.status_code == 200, patched.text
        after = scrape(sched.url, reader)
        assert after.by(OVERDUE, "path") == {"pulumi": 0, "cluster": 0, "api": 0}
        assert after.by(OLDEST, "path") == {"pulumi": 0, "cluster": 0, "api": 0}
        assert after.value("greenops_scheduler_reservations", phase="Provisioning") == 1
