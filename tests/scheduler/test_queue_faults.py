"""The queue under faults: two replicas on one real PostgreSQL server, a burst that overflows the
calendar into the queue, every placed booking released at once, and ``kill -9`` of one replica while
both admit. Afterwards nothing waiting is lost, nothing is admitted twice (an admission is one
revision on top of the Pending one), a released request is never admitted, and the calendar holds
exactly the admitted bookings, within capacity."""

from __future__ import annotations

import time
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime

import httpx
import pytest
from sqlalchemy import select

from greenops.common.clock import set_clock_file
from greenops.local.postgres import PostgresServer
from greenops.local.scheduler import SchedulerServer
from greenops.reservations import ListingFilter, ReservationStore
from greenops.reservations.slots import slots_of
from greenops.reservations.tables import slot_usage

pytestmark = pytest.mark.integration

NOW = "2027-01-10T03:00:00Z"
ZONES = ["FR", "DE", "PL", "NL"]
CAPACITY = 16
N = 240


def body(i: int) -> dict:
    # 2-hour jobs of 4 vCPU within 6 h over 4 zones: room for about a third of the burst at once
    return {
        "key": f"q/{i}",
        "eligible_regions": ZONES,
        "deadline": "2027-01-10T09:00:00Z",
        "duration": 2,
        "cpu": 4,
        "memory": 8,
        "queue": True,
    }


def send(urls: list[str], i: int, token: str, give_up: float) -> httpx.Response:
    """One client: retried on a connection error or a 503, round-robin over the replicas."""
    attempt = 0
    with httpx.Client(timeout=20, headers={"Authorization": f"Bearer {token}"}) as client:
        while True:
            try:
                r = client.post(f"{urls[attempt % len(urls)]}/scheduling", json=body(i))
                if r.status_code != 503:
                    return r
            except httpx.TransportError:
                pass
            attempt += 1
            assert time.monotonic() < give_up, f"q/{i}: no answer before the test's deadline"
            time.sleep(0.05)


def rows(url: str) -> dict[str, dict]:
    store = ReservationStore(url)
    try:
        listed = {r["key"]: r for r in store.list(ListingFilter(all=True))}
        with store.reading("test") as conn:
            calendar = {(z, s): m for z, s, m in conn.execute(select(slot_usage)) if m}
    finally:
        store.close()
    listed["(calendar)"] = calendar
    return listed


def release(urls: list[str], i: int, token: str, give_up: float) -> httpx.Response:
    """A release, retried on the next replica when one is gone."""
    attempt = 0
    while True:
        try:
            return httpx.delete(
                f"{urls[attempt % len(urls)]}/reservations/q/{i}",
                headers={"Authorization": f"Bearer {token}"},
                timeout=20,
            )
        except httpx.TransportError:
            attempt += 1
            assert time.monotonic() < give_up, f"q/{i}: not released before the test's deadline"


def scheduled(listed: dict[str, dict]) -> int:
    return sum(r["phase"] == "Scheduled" for k, r in listed.items() if k != "(calendar)")


def booked(listed: dict[str, dict]) -> dict[tuple[str, int], int]:
    used: dict[tuple[str, int], int] = defaultdict(int)
    for key, row in listed.items():
        if key != "(calendar)" and row["phase"] == "Scheduled":
            for p in row["placements"]:
                for s in slots_of(p["start"], p["end"]):
                    used[(p["zone"], s)] += row["milli_cpu"]
    return dict(used)


def test_kill_9_of_a_replica_mid_admission_loses_and_admits_twice_nothing(tmp_path):
    clock = tmp_path / "now"
    set_clock_file(clock, datetime.fromisoformat(NOW))
    env = {"GREENOPS_CLOCK_FILE": str(clock), "GREENOPS_SCHEDULER_QUEUE_SECONDS": "0.5"}
    with PostgresServer() as pg:
        a = SchedulerServer(capacity_vcpu=CAPACITY, database=pg.url, env=env, log=tmp_path / "a.log")
        admin = a.admin_token
        with (
            a,
            SchedulerServer(
                capacity_vcpu=CAPACITY, database=pg.url, env=env, log=tmp_path / "b.log", admin_token=admin
            ) as b,
        ):
            token = a.issue("t-ci", ["t"], paths=["api"])
            urls = [a.url, b.url]
            give_up = time.monotonic() + 240
            with ThreadPoolExecutor(24) as pool:
                got = dict(zip(range(N), pool.map(lambda i: send(urls, i, token, give_up), range(N)), strict=True))
            codes = defaultdict(int)
            for r in got.values():
                codes[r.status_code] += 1
            assert set(codes) == {200, 202}, codes
            placed = [i for i, r in got.items() if r.status_code == 200]
            waiting = [i for i, r in got.items() if r.status_code == 202]
            # a few of the waiting ones are released by their owner: they must never be admitted
            withdrawn = waiting[:5]
            for i in withdrawn:
                assert release(urls[::-1], i, token, give_up).status_code == 200
            # every placed booking released at once, A first, and A killed halfway: its releases and
            # its admitter's rounds are cut short; the clients retry their releases on B
            released: list[int] = []
            with ThreadPoolExecutor(8) as pool:
                done = [pool.submit(lambda i=i: released.append(i) or release(urls, i, token, give_up)) for i in placed]
                while len(released) < len(placed) // 2:
                    time.sleep(0.01)
                a.kill()
                assert all(f.result().status_code == 200 for f in done)
            admitted_before_restart = scheduled(rows(pg.url))
            a.start()  # the replica comes back on the same record
            # until a second of rounds admits nothing more
            last = None
            for _ in range(60):
                now = rows(pg.url)
                count = scheduled(now)
                if count == last:
                    break
                last = count
                time.sleep(1.5)
            a.stop()
    print(
        f"\n{N} requests: {len(placed)} placed, {len(waiting)} queued; after the release and the kill: "
        f"{admitted_before_restart} admitted before A came back, {last} in all"
    )
    keys = {f"q/{i}" for i in range(N)}
    assert set(now) - {"(calendar)"} == keys, "a request was lost"
    by_phase = defaultdict(set)
    for k in keys:
        by_phase[now[k]["phase"]].add(k)
    assert set(by_phase) <= {"Scheduled", "Pending", "Released"}, dict(by_phase)
    assert {f"q/{i}" for i in withdrawn} | {f"q/{i}" for i in placed} == by_phase["Released"]
    assert by_phase["Scheduled"], "nothing was admitted"
    for k in by_phase["Scheduled"]:
        assert now[k]["revision"] == 2, f"{k}: admitted more than once (revision {now[k]['revision']})"
        assert now[k]["admitted_at"] is not None and now[k]["queued_at"] is not None
    used = booked(now)
    assert used == now["(calendar)"], "the calendar differs from the admitted bookings"
    assert max(used.values()) <= CAPACITY * 1000
    assert by_phase["Pending"], "the queue emptied: the test would not see over-admission"
