"""Cardinality: 1000 workloads over 9 tenants add no series to the scheduler's /metrics beyond what
the first ten (all nine tenants among them) made. Labels are tenants, paths, results, route
templates and zones; never a workload or a key."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from greenops.local.scheduler import SchedulerServer
from tests.support.bookings import NOW, booking
from tests.support.scrape import scrape

pytestmark = pytest.mark.integration

TENANTS = [f"tenant-{i}" for i in range(9)]
WORKLOADS = 1000


def test_a_thousand_workloads_add_no_series(tmp_path: Path):
    env = {"GREENOPS_NOW": NOW, "GREENOPS_SCHEDULER_RATE_LIMIT": "none"}
    with SchedulerServer(log=tmp_path / "s.log", env=env) as sched:
        tokens = {t: sched.issue(f"{t}-ci", [t], paths=["pulumi"]) for t in TENANTS}
        reader = sched.issue("prometheus", None, paths=["api"], role="read")
        # one zone, so the zone label's values cannot grow with the bookings either
        body = booking(eligible_regions=["FR"], cpu=1)

        def book(i: int) -> int:
            tenant = TENANTS[i % len(TENANTS)]
            r = httpx.put(
                f"{sched.url}/reservations/{tenant}/wl-{i}",
                json={**body, "workload": {"name": f"wl-{i}", "memory": 8}},
                headers={"Authorization": f"Bearer {tokens[tenant]}"},
                timeout=60,
            )
            return r.status_code

        with ThreadPoolExecutor(8) as pool:
            assert set(pool.map(book, range(10))) == {200}
            scrape(sched.url, reader)  # a scrape is a request too: its own series exist from here on
            first = scrape(sched.url, reader)
            assert set(pool.map(book, range(10, WORKLOADS))) == {200}
        last = scrape(sched.url, reader)

        placed = last.by("greenops_scheduler_bookings_total", "tenant", result="placed")
        assert placed == {t: WORKLOADS // 9 + (i < WORKLOADS % 9) for i, t in enumerate(TENANTS)}
        assert last.value("greenops_scheduler_reservations", phase="Scheduled") == WORKLOADS
        assert last.series() == first.series(), sorted(set(last.samples) - set(first.samples))
        # bounded by what the labels range over: 9 tenants' bookings, and the fixed rest
        assert last.series() < 200
        values = {v for _, labels in last.samples for _, v in labels}
        assert not [v for v in values if "wl-" in v], "a workload or key became a label value"
