"""A booking as the scheduler suites send one, the instant their schedulers decide at, and a real
scheduler holding one booking whose gate is now (for the lateness and alert tests)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import httpx

from greenops.common.clock import parse_time, set_clock_file
from greenops.local.scheduler import SchedulerServer
from greenops.reservations import ListingFilter, ReservationStore

NOW = "2027-01-10T03:00:00Z"  # GREENOPS_NOW of the schedulers these bookings go to


def burst_booking(tenant: str, cpu: float = 1, **over: object) -> dict:
    """A two-hour booking of the kill -9 bursts: four zones and one deadline, on the clock NOW."""
    return {
        "eligible_regions": ["FR", "DE", "PL", "NL"],
        "deadline": "2027-01-10T15:00:00Z",
        "duration": 2,
        "cpu": cpu,
        "memory": 2,
        "tenant": tenant,
        **over,
    }


def send_until_answered(
    url: str, method: str, path: str, token: str, json: dict | None, give_up: float
) -> httpx.Response:
    """Retried on connection errors and 503 (a scheduler killed or restarting), as Placement's client
    and OPA's http.send attempts are, until the test's deadline."""
    with httpx.Client(timeout=15) as client:
        while True:
            try:
                r = client.request(method, f"{url}{path}", json=json, headers={"Authorization": f"Bearer {token}"})
                if r.status_code != 503:
                    return r
            except httpx.TransportError:
                pass
            if time.monotonic() > give_up:
                raise AssertionError(f"{method} {path}: no answer before the test's deadline")
            time.sleep(0.05)


def every_reservation(database: str) -> list[dict]:
    """Every row of the record at ``database``, in any phase, read directly (as after a kill -9)."""
    store = ReservationStore(database)
    try:
        return store.list(ListingFilter(all=True))
    finally:
        store.close()


def booking(**over: object) -> dict:
    body: dict = {
        "eligible_regions": ["FR", "DE"],
        "deadline": "2027-01-11T03:00:00Z",
        "duration": 2,
        "cpu": 4,
        "memory": 8,
    }
    body.update(over)
    return body


@dataclass(frozen=True)
class DueNow:
    """A real scheduler on a clock file, holding one Pulumi-path booking (team-a/etl) whose only start,
    and so whose gate, is the clock's first instant."""

    scheduler: SchedulerServer
    clock: Path  # play it forward with greenops.common.clock.set_clock_file
    t0: datetime
    writer: dict[str, str]  # the tenant's headers: its reconciler reports phases with them
    reader: str  # a read credential for every tenant: Prometheus's


@contextmanager
def booking_due_now(tmp_path: Path) -> Iterator[DueNow]:
    t0 = parse_time(NOW)
    clock = tmp_path / "clock"
    set_clock_file(clock, t0)
    # the clock file is re-read at every call: the running scheduler follows it forward
    with SchedulerServer(log=tmp_path / "s.log", env={"GREENOPS_CLOCK_FILE": str(clock)}) as sched:
        writer = {"Authorization": f"Bearer {sched.issue('team-a-ci', ['team-a'], paths=['pulumi'])}"}
        reader = sched.issue("prometheus", None, paths=["api"], role="read")
        # a 2 h run due within 2 h: its only start is now
        body = booking(eligible_regions=["FR"], deadline="2027-01-10T05:00:00Z", duration=2)
        r = httpx.put(f"{sched.url}/reservations/team-a/etl", json=body, headers=writer, timeout=30)
        assert r.status_code == 200, r.text
        assert parse_time(r.json()["scheduling_time"]) == t0
        yield DueNow(sched, clock, t0, writer, reader)
