"""The record's database errors and retried transactions, on the real scheduler with its SQLite file:
a table taken away under it is an error of each operation that met it (the scrape's own reading of
the record among them, which leaves its gauges out rather than failing the scrape); bookings racing
for one key are retried, not failed."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import httpx
import pytest

from greenops.local.scheduler import SchedulerServer
from tests.support.bookings import NOW, booking
from tests.support.scrape import scrape

pytestmark = pytest.mark.integration

ERRORS = "greenops_scheduler_database_errors_total"


def _sqlite_file(sched: SchedulerServer) -> str:
    assert sched.database is not None and sched.database.startswith("sqlite:///")
    return sched.database.removeprefix("sqlite:///")


def test_database_errors_are_counted_by_operation(tmp_path: Path):
    with SchedulerServer(log=tmp_path / "s.log", env={"GREENOPS_NOW": NOW}) as sched:
        reader = sched.issue("prometheus", None, paths=["api"], role="read")
        auth = {"Authorization": f"Bearer {reader}"}
        assert scrape(sched.url, reader).by(ERRORS, "operation") == {}

        db = sqlite3.connect(_sqlite_file(sched))
        try:
            db.execute("ALTER TABLE reservations RENAME TO reservations_away")
            db.commit()
            assert httpx.get(f"{sched.url}/reservations", headers=auth, timeout=15).status_code == 500
            broken = scrape(sched.url, reader)
            assert broken.by(ERRORS, "operation") == {"list": 1, "census": 1}
            assert "greenops_scheduler_reservations" not in broken.families  # left out, not made up

            db.execute("ALTER TABLE reservations_away RENAME TO reservations")
            db.commit()
        finally:
            db.close()
        mended = scrape(sched.url, reader)
        assert mended.by(ERRORS, "operation") == {"list": 1, "census": 1}
        assert mended.value("greenops_scheduler_reservations", phase="Scheduled") == 0


def race(clients: list[httpx.Client], key: str) -> list[int]:
    """Every client PUTs ``key`` at once, each with another spec; their status codes."""
    codes: list[int] = []
    start = threading.Barrier(len(clients))

    def put(c: httpx.Client, cpu: int) -> None:
        c.get("/healthz")  # the connection is open before the race starts
        start.wait()
        codes.append(c.put(f"/reservations/{key}", json=booking(cpu=cpu)).status_code)

    threads = [threading.Thread(target=put, args=(c, i + 1)) for i, c in enumerate(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return codes


def test_bookings_racing_for_one_key_are_retried(tmp_path: Path):
    env = {"GREENOPS_NOW": NOW, "GREENOPS_SCHEDULER_RATE_LIMIT": "none"}
    with SchedulerServer(log=tmp_path / "s.log", env=env) as sched:
        writer = sched.issue("team-a-ci", ["team-a"], paths=["pulumi"])
        reader = sched.issue("prometheus", None, paths=["api"], role="read")
        auth = {"Authorization": f"Bearer {writer}"}
        clients = [httpx.Client(base_url=sched.url, headers=auth, timeout=60) for _ in range(16)]
        retries = None
        try:
            # Each request reads the key, searches, then commits; those that read it before another's
            # commit meet a conflict and search again. Released together, some always do, though which
            # and how many is the scheduler's timing: a few bursts make sure one raced.
            for burst in range(5):
                assert race(clients, f"team-a/race-{burst}") == [200] * len(clients)
                retries = scrape(sched.url, reader).value(
                    "greenops_scheduler_database_retries_total", operation="commit"
                )
                if retries:
                    break
        finally:
            for c in clients:
                c.close()
        assert retries is not None and retries >= 1
        assert scrape(sched.url, reader).by(ERRORS, "operation") == {}  # a conflict is not an error
