"""A burst of bookings as Placement's and OPA's clients send them (each with its key and its
principal's credential, retried with the same key on a connection error or a 503), and the checks
after it: the record holds exactly the answers the clients got, no zone-hour is over capacity, and
asking again books nothing new. Shared by the scheduler's fault suites and the real node's."""

from __future__ import annotations

import threading
import time
from collections import defaultdict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import httpx

from greenops.local.scheduler import SchedulerServer, issue_credential
from greenops.reservations import ACTIVE, ListingFilter, ReservationStore
from greenops.reservations.slots import slots_of

NOW = "2027-01-10T03:00:00Z"
ZONES = ["FR", "DE", "PL", "NL"]
CAPACITY = 16
DEADLINE = "2027-01-10T15:00:00Z"  # 12 h after NOW


def request(i: int, deadline: str = DEADLINE) -> dict:
    # 2-hour jobs of 4 vCPU within 12 h over 4 zones: room for about a third of a 300-request burst,
    # so answers mix 200 and 409 and the calendar is full at the end.
    return {
        "key": f"burst/{i}",
        "eligible_regions": ZONES,
        "deadline": deadline,
        "duration": 2,
        "cpu": 4,
        "memory": 8,
        "tenant": f"t{i % 3}",
        "path": "cluster" if i % 2 else "pulumi",
    }


class Issuer:
    """What issue_tokens needs of a scheduler anywhere: its URL and its bootstrap admin's token."""

    def __init__(self, url: str, admin_token: str) -> None:
        self.url, self.admin_token = url, admin_token

    def issue(self, name: str, tenants: list[str] | None, paths: list[str], role: str = "write") -> str:
        return issue_credential(self.url, self.admin_token, name, tenants, paths, role)


Tokens = dict[str, str]  # "cluster" -> OPA's token; tenant -> that tenant's Pulumi-path token


def issue_tokens(s: SchedulerServer | Issuer) -> Tokens:
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
    urls: list[str],
    n: int,
    workers: int,
    tokens: Tokens,
    answered: list | None = None,
    make: Callable[[int], dict] = request,
) -> dict[str, list[httpx.Response]]:
    give_up = time.monotonic() + 180
    got: dict[str, list[httpx.Response]] = defaultdict(list)
    lock = threading.Lock()

    def one(i: int) -> None:
        r = send_until_answered(urls, make(i), give_up, tokens)
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


def retry_each(
    urls: list[str], got: dict[str, list[httpx.Response]], tokens: Tokens, make: Callable[[int], dict] = request
) -> None:
    """Every key asked again: the same placement, nothing new booked."""
    with httpx.Client(timeout=15) as client:
        for i, key in enumerate(sorted(got)):
            first = got[key][-1]
            body = make(int(key.split("/")[1]))
            again = client.post(f"{urls[i % len(urls)]}/scheduling", json=body, headers=auth(tokens, body))
            if first.status_code == 200:
                assert again.status_code == 200 and again.json() == first.json(), key
                assert again.headers.get("idempotent-replayed") == "true", key
