"""kill -9 of the scheduler in the middle of a burst of admission CREATEs (new keys, OPA's
principal) and of forged CREATEs that reuse the keys of reservations already made: after a restart
on the same record, no reservation made before the burst changed, every forged rebooking was
refused (409), and every CREATE's retry replays its answer."""

from __future__ import annotations

import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from greenops.local.scheduler import SchedulerServer
from tests.support.bookings import NOW, burst_booking, every_reservation, send_until_answered

pytestmark = pytest.mark.integration

BOOKED = 20  # made before the burst: what the forged CREATEs go for
BURST = 90  # new CREATEs during the burst


def create(key: str, cpu: float) -> dict:
    """An admission CREATE as OPA's webhook sends it: a new key of the cluster path."""
    return burst_booking(key.split("/")[0], cpu, key=key, path="cluster", new_key=True)


def send(url: str, token: str, body: dict, give_up: float) -> httpx.Response:
    return send_until_answered(url, "POST", "/scheduling", token, body, give_up)


def test_kill_9_mid_burst_rebooks_nothing_and_every_create_replays(tmp_path):
    database = f"sqlite:///{tmp_path / 'record.db'}"
    env = {"GREENOPS_NOW": NOW}
    first = SchedulerServer(database=database, env=env, log=tmp_path / "first.log")
    first.start()
    try:
        opa = first.issue("opa", None, paths=["cluster"])
        give_up = time.monotonic() + 240
        made = {f"team-a/vm-{n}/{uuid.uuid4()}": None for n in range(BOOKED)}
        for k in made:
            r = send(first.url, opa, create(k, 2), give_up)
            assert r.status_code == 200, r.text
            made[k] = r.json()
        fresh = [f"team-b/vm-{n}/{uuid.uuid4()}" for n in range(BURST)]
        answers: dict[str, httpx.Response] = {}
        forged: list[httpx.Response] = []
        lock = threading.Lock()

        def owner(k: str) -> None:
            r = send(first.url, opa, create(k, 2), give_up)
            with lock:
                answers[k] = r

        def forger(n: int) -> None:
            r = send(first.url, opa, create(list(made)[n % BOOKED], 48), give_up)
            with lock:
                forged.append(r)

        with ThreadPoolExecutor(8) as pool:
            work = [pool.submit(owner, k) for k in fresh] + [pool.submit(forger, n) for n in range(BURST)]
            while len(answers) < BURST // 3:
                time.sleep(0.002)
            first.kill()
            killed_at = len(answers)
            with SchedulerServer(database=database, env=env, port=first.port, log=tmp_path / "second.log") as second:
                for w in work:
                    w.result()
                assert killed_at < BURST, "the burst finished before the kill"
                assert {r.status_code for r in answers.values()} == {200}
                assert {r.status_code for r in forged} == {409}, {r.text for r in forged if r.status_code != 409}
                rows = {(r["tenant"], r["key"]): r for r in every_reservation(database)}
                for k, answer in made.items():
                    row = rows[("team-a", k)]
                    assert (row["milli_cpu"], row["revision"], row["answer"]) == (2000, 1, answer), k
                assert len(rows) == BOOKED + BURST  # every CREATE once, nothing else
                for k, first_answer in answers.items():
                    again = send(second.url, opa, create(k, 2), give_up)
                    assert again.status_code == 200 and again.json() == first_answer.json(), k
                    assert again.headers.get("idempotent-replayed") == "true", k
                print(f"\nkill -9 after {killed_at} of {BURST} CREATEs; {len(forged)} forged rebookings, all 409")
    finally:
        first.stop()
