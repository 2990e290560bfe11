"""The reservation record under faults, through real scheduler processes: a burst with a
``kill -9`` in the middle (SQLite), and two replicas on one real PostgreSQL server.

Clients behave as Placement's and OPA's do: each request carries its key and its principal's
credential (a tenant's token on the Pulumi path, OPA's on the cluster path), and a connection error
or a 503 is retried with the same key. Afterwards the record must hold exactly the answers the
clients got, and no zone-hour may be over capacity.
"""

from __future__ import annotations

import threading
import time
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from greenops.local.postgres import PostgresServer
from greenops.local.scheduler import SchedulerServer
from greenops.reservations import ACTIVE, ListingFilter, ReservationStore
from greenops.reservations.slots import slots_of

pytestmark = pytest.mark.integration

NOW = "2027-01-10T03:00:00Z"
ZONES = ["FR", "DE", "PL", "NL"]
CAPACITY = 16


def request(i: int) -> dict:
    # 2-hour jobs of 4 vCPU within 12 h over 4 zones: room for about a third of a 300-request burst,
    # so answers mix 200 and 409 and the calendar is full at the end.
    return {
        "key": f"burst/{i}",
        "eligible_regions": ZONES,
        "deadline": "2027-01-10T15:00:00Z",
        "duration": 2,
        "cpu": 4,
        "memory": 8,
        "tenant": f"t{i % 3}",
        "path": "cluster" if i % 2 else "pulumi",
    }


Tokens = dict[str, str]  # "cluster" -> OPA's token; tenant -> that tenant's Pulumi-path token


def issue_tokens(s: SchedulerServer) -> Tokens:
    """The callers' credentials, stored in the record: every replica on it accepts them."""
    tokens = {f"t{n}": s.issue(f"t{n}-stack", [f"t{n}"], paths=["pulumi"]) for n in range(3)}
    tokens["cluster"] = s.issue("opa", None, paths=["cluster"])
    return tokens


def auth(tokens: Tokens, body: dict) -> dict[str, str]:
    who = "cluster" if body["path"] == "cluster" else body["tenant"]
    return {"Authorization": f"Bearer {tokens[who]}"}


def send_until_answered(urls: list[str], body: dict, give_up: float, tokens: Tokens) -> httpx.Response:
    """One client: the same body, retried on every connection error or 503, round-robin over urls."""
    attempt = 0
    with httpx.Client(timeout=15, headers=auth(tokens, body)) as client:
        while True:
            try:
                r = client.post(f"{urls[attempt % len(urls)]}/scheduling", json=body)
                if r.status_code != 503:
                    return r
            except httpx.TransportError:
                pass
            attempt += 1
            if time.monotonic() > give_up:
                raise AssertionError(f"{body['key']}: no answer before the test's deadline")
            time.sleep(0.05)


def burst(
    urls: list[str], n: int, workers: int, tokens: Tokens, answered: list | None = None
) -> dict[str, list[httpx.Response]]:
    give_up = time.monotonic() + 180
    got: dict[str, list[httpx.Response]] = defaultdict(list)
    lock = threading.Lock()

    def one(i: int) -> None:
        r = send_until_answered(urls, request(i), give_up, tokens)
        with lock:
            got[f"burst/{i}"].append(r)
            if answered is not None:
                answered.append(i)

    with ThreadPoolExecutor(workers) as pool:
        list(pool.map(one, range(n)))
    return got


def assert_record_matches(url: str, got: dict[str, list[httpx.Response]]) -> None:
    store = ReservationStore(url)
    try:
        rows = {r["key"]: r for r in store.list(ListingFilter(all=True))}
    finally:
        store.close()
    assert {r.status_code for rs in got.values() for r in rs} <= {200, 409}
    ok = {k: rs[-1].json() for k, rs in got.items() if rs[-1].status_code == 200}
    assert ok, "the burst placed nothing"
    assert len(ok) < len(got), "the calendar never filled up: the test would not see over-booking"
    assert set(rows) == set(ok), "the record differs from the answers the clients received"
    for key, answer in ok.items():
        assert rows[key]["phase"] in ACTIVE and rows[key]["answer"] == answer, key
    used: dict[tuple[str, int], int] = defaultdict(int)
    for row in rows.values():
        for p in row["placements"]:
            for s in slots_of(p["start"], p["end"]):
                used[(p["zone"], s)] += row["milli_cpu"]
    over = {k: v for k, v in used.items() if v > CAPACITY * 1000}
    assert not over, f"zone-hours over capacity: {over}"


def retry_each(urls: list[str], got: dict[str, list[httpx.Response]], tokens: Tokens) -> None:
    """Every key asked again: the same placement, nothing new booked."""
    with httpx.Client(timeout=15) as client:
        for i, key in enumerate(sorted(got)):
            first = got[key][-1]
            body = request(int(key.split("/")[1]))
            again = client.post(f"{urls[i % len(urls)]}/scheduling", json=body, headers=auth(tokens, body))
            if first.status_code == 200:
                assert again.status_code == 200 and again.json() == first.json(), key
                assert again.headers.get("idempotent-replayed") == "true", key


def test_kill_9_mid_burst_on_sqlite_loses_and_doubles_nothing(tmp_path):
    database = f"sqlite:///{tmp_path / 'reservations.db'}"
    env = {"GREENOPS_NOW": NOW}
    first = SchedulerServer(capacity_vcpu=CAPACITY, database=database, env=env, log=tmp_path / "first.log")
    first.start()
    answered: list[int] = []
    try:
        tokens = issue_tokens(first)
        with ThreadPoolExecutor(1) as runner:
            pending = runner.submit(burst, [first.url], 300, 16, tokens, answered)
            while len(answered) < 100:
                assert not pending.done(), "the burst finished before the kill"
                time.sleep(0.01)
            first.kill()
            killed_at = len(answered)
            second = SchedulerServer(
                capacity_vcpu=CAPACITY, database=database, env=env, port=first.port, log=tmp_path / "second.log"
            )
            with second:
                got = pending.result()
                print(
                    f"\nkill -9 after {killed_at} of 300 answers; "
                    f"{sum(r[-1].status_code == 200 for r in got.values())} placed, "
                    f"{sum(r[-1].status_code == 409 for r in got.values())} refused"
                )
                assert len(got) == 300
                assert_record_matches(database, got)
                retry_each([second.url], got, tokens)
                assert_record_matches(database, got)
    finally:
        first.stop()


def test_two_replicas_on_one_real_postgresql_never_overbook(tmp_path):
    with PostgresServer() as pg:
        env = {"GREENOPS_NOW": NOW}
        with (
            SchedulerServer(capacity_vcpu=CAPACITY, database=pg.url, env=env, log=tmp_path / "a.log") as a,
            SchedulerServer(capacity_vcpu=CAPACITY, database=pg.url, env=env, log=tmp_path / "b.log") as b,
        ):
            urls = [a.url, b.url]
            tokens = issue_tokens(a)
            got = burst(urls, 500, 48, tokens)
            placed = sum(r[-1].status_code == 200 for r in got.values())
            print(f"\ntwo replicas, 500 requests: {placed} placed, {500 - placed} refused")
            assert_record_matches(pg.url, got)
            retry_each(urls, got, tokens)
            assert_record_matches(pg.url, got)
