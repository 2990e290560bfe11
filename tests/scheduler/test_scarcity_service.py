"""The scarcity price in the real service (greenops/scheduler/outlook.py), switched on by its
setting: a flexible request leaves the hours that last week's urgent requests took, and only then."""

from __future__ import annotations

import secrets
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest

from greenops.common.clock import stamp
from greenops.local.scheduler import SchedulerServer
from greenops.scheduler.outlook import urgent

pytestmark = pytest.mark.integration

T0 = datetime(2026, 11, 23, 0, 0, tzinfo=UTC)  # a Monday: the flexible request is made at its midnight


def test_a_request_is_urgent_when_it_left_its_search_less_than_an_hour():
    made = datetime(2026, 11, 23, 10, 0, tzinfo=UTC)
    row = {
        "created_at": made,
        "start_at": made,
        "end_at": made + timedelta(hours=2),
        "milli_cpu": 4000,
        "jobs": 2,
        "request": {"deadline": stamp(made + timedelta(hours=2, minutes=30)), "duration": 2},
    }
    u = urgent(row)
    assert u is not None and (u.made, u.duration, u.cpu) == (made.timestamp(), 7200.0, 8.0)
    assert urgent({**row, "request": {"deadline": stamp(made + timedelta(hours=3)), "duration": 2}}) is None
    later = {
        "deadline": stamp(made + timedelta(hours=9)),
        "duration": 2,
        "earliest_start": stamp(made + timedelta(hours=7)),
    }
    assert urgent({**row, "request": later}) is not None  # its own earliest start left it no choice
    assert urgent({**row, "request": {"duration": 2}}) is None  # not the contract's fields: not learnt from


def flexible(tenant_headers, url: str) -> datetime:
    """Where a 16-vCPU, 2-hour request with a day to run would go in FR: a dry run, so it books nothing."""
    body = {
        "eligible_regions": ["FR"],
        "deadline": stamp(T0 + timedelta(hours=24)),
        "duration": 2,
        "cpu": 16,
        "memory": 8,
        "dry_run": True,
    }
    r = httpx.post(f"{url}/scheduling", json=body, headers=tenant_headers, timeout=15)
    assert r.status_code == 200, r.text
    return datetime.fromisoformat(r.json()["scheduling_time"].replace("Z", "+00:00"))


def test_with_the_price_on_a_flexible_request_leaves_the_hours_last_weeks_urgent_ones_took():
    folder = Path(tempfile.mkdtemp(prefix="greenops-scarcity-"))
    database, admin = f"sqlite:///{folder / 'record.db'}", secrets.token_hex(24)

    def server(now: datetime, priced: bool) -> SchedulerServer:
        env = {"GREENOPS_NOW": stamp(now), "GREENOPS_SCHEDULER_SCARCITY_PRICE": "true" if priced else "false"}
        return SchedulerServer(capacity_vcpu=16, database=database, admin_token=admin, env=env, log=folder / "s.log")

    with server(T0 - timedelta(days=8), priced=True) as s:
        # the record's first booking, 8 days back: the outlook looks a week back once it knows a week
        headers = {"Authorization": f"Bearer {s.issue('scarcity', ['default'])}"}
        first = {"eligible_regions": ["DE"], "deadline": stamp(T0), "duration": 1, "cpu": 1, "memory": 1}
        assert httpx.post(f"{s.url}/scheduling", json=first, headers=headers, timeout=15).status_code == 200
    with server(T0, priced=True) as s:
        chosen = flexible(headers, s.url)  # the record knows no urgent request: the plain answer
    assert chosen > T0, "the test needs FR's cleanest two hours to lie ahead of midnight"
    # a week before that window, an urgent request (no slack) ran 8 vCPU in FR through it
    made = chosen - timedelta(weeks=1)
    with server(made, priced=True) as s:
        body = {
            "eligible_regions": ["FR"],
            "deadline": stamp(made + timedelta(hours=2)),
            "duration": 2,
            "cpu": 8,
            "memory": 8,
        }
        r = httpx.post(f"{s.url}/scheduling", json=body, headers=headers, timeout=15)
        assert r.status_code == 200 and r.json()["scheduling_time"] == stamp(made), r.text
    with server(T0, priced=False) as s:
        assert flexible(headers, s.url) == chosen  # off: nothing changes
    with server(T0, priced=True) as s:
        moved = flexible(headers, s.url)
    # 16 vCPU there would leave no room for the 8 expected: the flexible request goes elsewhere
    assert abs((moved - chosen).total_seconds()) >= 2 * 3600, (chosen, moved)
