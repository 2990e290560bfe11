"""Preemption on the real service (greenops/scheduler/preemption.py), on SQLite and PostgreSQL: with
the policy's ``preemption: waiting``, a request of a higher class that no window has room for takes
the hours of a Scheduled booking of a lower class that has not begun, which goes back to the queue
saying why, and is placed again when room frees. Never a booking of the same class, never one
starting within the notice, never one running; and with the default ``off``, nothing is preempted."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack

import httpx
import pytest

from greenops.common.clock import stamp
from greenops.local.postgres import PostgresServer
from tests.scheduler.test_queue import HOUR, POLICY, T0, Record, ask, release, reservation, wait_for

pytestmark = pytest.mark.integration

PREEMPTING = POLICY + "preemption: waiting\npreemption_notice_minutes: 30\n"


@pytest.fixture(params=["sqlite", "postgresql"])
def database(request: pytest.FixtureRequest) -> Iterator[str | None]:
    with ExitStack() as stack:
        yield stack.enter_context(PostgresServer()).url if request.param == "postgresql" else None


def later(record: Record, s, token: str, key: str, hours_from: float, **over) -> httpx.Response:
    """8 vCPU in FR for 2 h, from ``hours_from`` after T0, with an hour of slack: it fills FR then."""
    body = {"earliest_start": stamp(T0 + hours_from * HOUR), "deadline": stamp(T0 + (hours_from + 3) * HOUR)}
    return ask(record, s, token, key, **({"queue": False} | body | over))


def test_a_higher_class_takes_the_hours_of_a_waiting_booking_which_queues_and_is_placed_again(database):
    record = Record(PREEMPTING, database)
    with record.at(T0) as s:
        tok = {t: record.token(s, t) for t in ("alpha", "gold", "beta")}
        first = later(record, s, tok["alpha"], "etl", 2, queue=True)
        assert first.status_code == 200 and first.json()["preemptible"] is True, first.text
        etl = reservation(s, "etl", "alpha")
        assert etl["phase"] == "Scheduled" and etl["revision"] == 1
        # the same class takes nothing: alpha's second request is refused as before
        same = later(record, s, tok["alpha"], "etl-2", 2)
        assert same.status_code == 409, same.text
        # gold (critical) has no room either, but may take the hours of alpha's (standard), which
        # starts 2 h from now: nothing of it has begun
        urgent = later(record, s, tok["gold"], "urgent", 2)
        assert urgent.status_code == 200, urgent.text
        assert urgent.json()["scheduling_location"] == "FR"
        assert urgent.json()["preemptible"] is False  # nothing is above critical
        etl = reservation(s, "etl", "alpha")
        assert etl["phase"] == "Pending" and etl["zone"] == "" and etl["revision"] == 2, etl
        assert etl["priority_class"] == "standard" and etl["position"] == 1
        reason = etl["reason"]
        assert "preempted at" in reason and "critical (1000)" in reason and "standard (100)" in reason, reason
        assert "gold" not in reason and "urgent" not in reason  # nothing of the other tenant's is told
        # its owner's retry of the same request is told it waits, not booked twice
        again = later(record, s, tok["alpha"], "etl", 2, queue=True)
        assert again.status_code == 202 and again.json()["position"] == 1, again.text
        metrics = httpx.get(f"{s.url}/metrics", headers=s.admin_headers).text
        assert 'greenops_scheduler_preempted_total{path="api"} 1.0' in metrics
        # when gold's booking is released, the queue places alpha's again, with its request unchanged
        release(s, tok["gold"], "urgent")
        placed = wait_for(lambda: (r := reservation(s, "etl", "alpha"))["phase"] == "Scheduled" and r)
        assert placed["zone"] == "FR" and placed["revision"] == 3
        assert placed["start"] >= stamp(T0 + 2 * HOUR)


def test_what_has_begun_or_starts_within_the_notice_is_never_preempted(database):
    record = Record(PREEMPTING, database)
    with record.at(T0) as s:
        tok = {t: record.token(s, t) for t in ("beta", "gold")}
        # beta's batch bookings: one running in FR, one in DE starting in 20 min (within the 30 min notice)
        assert later(record, s, tok["beta"], "running", 0, priority_class="batch").status_code == 200
        r = httpx.patch(
            f"{s.url}/reservations/running",
            json={"phase": "Running"},
            headers={"Authorization": f"Bearer {tok['beta']}"},
            timeout=15,
        )
        assert r.status_code == 200, r.text
        soon = {"eligible_regions": ["DE"], "deadline": stamp(T0 + (2 + 1 / 3) * HOUR), "priority_class": "batch"}
        assert later(record, s, tok["beta"], "soon", 1 / 3, **soon).status_code == 200
        # gold asks for the hours each holds: nothing of lower class may yield them
        for zone, deadline in (("FR", T0 + 2.5 * HOUR), ("DE", T0 + 2.5 * HOUR)):
            refused = later(
                record, s, tok["gold"], f"urgent-{zone}", 0, eligible_regions=[zone], deadline=stamp(deadline)
            )
            assert refused.status_code == 409, refused.text
        assert reservation(s, "running", "beta")["phase"] == "Running"
        assert reservation(s, "soon", "beta")["phase"] == "Scheduled"


def test_with_preemption_off_a_higher_class_waits_and_nothing_is_taken():
    record = Record()  # the default policy: preemption off
    with record.at(T0) as s:
        tok = {t: record.token(s, t) for t in ("alpha", "gold")}
        etl = later(record, s, tok["alpha"], "etl", 2)
        assert etl.status_code == 200 and etl.json()["preemptible"] is False, etl.text
        urgent = later(record, s, tok["gold"], "urgent", 2, queue=True)
        assert urgent.status_code == 202 and urgent.json()["position"] == 1, urgent.text
        assert reservation(s, "etl", "alpha")["phase"] == "Scheduled"
        assert reservation(s, "etl", "alpha")["revision"] == 1
