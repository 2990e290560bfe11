"""A Placement that meets the scheduler's rate limit waits out the Retry-After it is told, within a
budget, and books exactly once; past the budget it names the refusal at once. Real scheduler on
loopback, its real per-principal limiter."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta

import httpx
import pytest

from greenops.local.scheduler import SchedulerServer
from greenops.placing.scheduler_client import Reservation, SchedulerClient, SchedulerRefused
from greenops.reservations import ReservationStore

pytestmark = pytest.mark.integration

NOW = "2027-01-10T03:00:00Z"
DEADLINE = datetime(2027, 1, 11, 3, tzinfo=UTC)


def book(client: SchedulerClient, key: str) -> dict:
    return client.schedule(
        ["FR", "DE"], DEADLINE, 1.0, 2, 4, earliest_start=DEADLINE - timedelta(days=1),
        reservation=Reservation(key=key, tenant="team-a"),
    )  # fmt: skip


def rate_limited(sched: SchedulerServer) -> float:
    """The scheduler's own count of the requests it refused for the rate limit."""
    reader = sched.issue("prometheus", None, paths=["api"], role="read")
    text = httpx.get(f"{sched.url}/metrics", headers={"Authorization": f"Bearer {reader}"}, timeout=10).text
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith("greenops_scheduler_bookings_total") and 'result="rate_limited"' in line
    )


def booked(sched: SchedulerServer) -> list[str]:
    store = ReservationStore(sched.database or "")
    try:
        return sorted(row["key"] for row in store.list())
    finally:
        store.close()


@pytest.fixture()
def sched(tmp_path):
    env = {"GREENOPS_NOW": NOW, "GREENOPS_SCHEDULER_RATE_LIMIT": "2/second"}
    with SchedulerServer(env=env, log=tmp_path / "s.log") as server:
        yield server


def test_a_burst_over_the_limit_waits_it_out_and_books_each_once(sched):
    token = sched.issue("team-a-ci", ["team-a"], paths=["pulumi"])
    keys = [f"pulumi/dev/job-{i}" for i in range(12)]

    def one(key: str) -> dict:
        with SchedulerClient(sched.url, token=token, wait_budget=30) as client:
            return book(client, key)

    # four at once, as the provider's four workers call: more than twice the limit each second
    with ThreadPoolExecutor(4) as pool:
        answers = list(pool.map(one, keys))

    assert all(a["placements"] for a in answers), answers[0]
    assert rate_limited(sched) > 0, "the burst never met the limit, so this test proves nothing"
    assert booked(sched) == sorted(keys)  # none lost, none twice


def test_without_a_budget_the_refusal_is_named_at_once(tmp_path):
    env = {"GREENOPS_NOW": NOW, "GREENOPS_SCHEDULER_RATE_LIMIT": "2/minute"}  # a slow machine still meets it
    with SchedulerServer(env=env, log=tmp_path / "s.log") as sched:
        token = sched.issue("team-a-ci", ["team-a"], paths=["pulumi"])
        with SchedulerClient(sched.url, token=token) as client:
            with pytest.raises(SchedulerRefused) as refused:
                for i in range(3):
                    book(client, f"pulumi/dev/job-{i}")
        message = str(refused.value)
        assert "HTTP 429" in message and "principal team-a-ci" in message and "retry in" in message
        assert len(booked(sched)) == 2  # what was refused was not half-booked


def test_a_wait_longer_than_the_budget_is_not_waited(tmp_path):
    env = {"GREENOPS_NOW": NOW, "GREENOPS_SCHEDULER_RATE_LIMIT": "1/minute"}
    with SchedulerServer(env=env, log=tmp_path / "s.log") as sched:
        token = sched.issue("team-a-ci", ["team-a"], paths=["pulumi"])
        with SchedulerClient(sched.url, token=token, wait_budget=5) as client:
            book(client, "pulumi/dev/first")
            started = time.monotonic()
            with pytest.raises(SchedulerRefused, match=r"HTTP 429.*retry in \d+ s"):
                book(client, "pulumi/dev/second")
            assert time.monotonic() - started < 3  # the minute's wait is named, not slept through
            assert client.waited == 0
        assert booked(sched) == ["pulumi/dev/first"]
