"""kill -9 of the scheduler in the middle of a burst from several principals, one of them trying to
take the others' bookings: after a restart on the same record, no booking changed owner, every
takeover acted on the attacker's own reservations only (a key is its tenant's: her booking of
another's key is hers), and every owner's retry replays its answer."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from greenops.local.scheduler import SchedulerServer
from tests.support.bookings import NOW, burst_booking, every_reservation, send_until_answered

pytestmark = pytest.mark.integration

TENANTS = ["team-a", "team-b", "team-c"]
BOOKED = 30  # owned before the burst: what the attacker goes for
BURST = 120  # new bookings of the owners during the burst


def key(n: int) -> str:
    return f"{TENANTS[n % 3]}/job-{n}"


def test_kill_9_mid_burst_changes_no_owner(tmp_path):
    database = f"sqlite:///{tmp_path / 'reservations.db'}"
    env = {"GREENOPS_NOW": NOW}
    first = SchedulerServer(database=database, env=env, log=tmp_path / "first.log")
    first.start()
    try:
        tokens = {t: first.issue(f"{t}-ci", [t], paths=["pulumi"]) for t in TENANTS}
        mallory = first.issue("mallory", ["mallory"], paths=["pulumi"])
        give_up = time.monotonic() + 240
        answers: dict[str, httpx.Response] = {}
        for n in range(BOOKED):
            answers[key(n)] = send_until_answered(
                first.url,
                "PUT",
                f"/reservations/{key(n)}",
                tokens[TENANTS[n % 3]],
                burst_booking(TENANTS[n % 3]),
                give_up,
            )
        assert {r.status_code for r in answers.values()} == {200}
        attacks: list[httpx.Response] = []
        lock = threading.Lock()
        answered = [0]

        def owner(n: int) -> None:
            tenant = TENANTS[n % 3]
            r = send_until_answered(
                first.url, "PUT", f"/reservations/{key(n)}", tokens[tenant], burst_booking(tenant), give_up
            )
            with lock:
                answers[key(n)] = r
                answered[0] += 1

        def attacker(n: int) -> None:
            target = key(n % BOOKED)
            method, json = (
                ("PUT", burst_booking("mallory", cpu=2)),
                ("PATCH", {"phase": "Failed", "reason": "mine now"}),
                ("DELETE", None),
            )[n % 3]
            r = send_until_answered(first.url, method, f"/reservations/{target}", mallory, json, give_up)
            with lock:
                attacks.append(r)

        with ThreadPoolExecutor(8) as pool:
            work = []
            for n in range(BURST):
                work.append(pool.submit(owner, BOOKED + n))
                work.append(pool.submit(attacker, n))
            while answered[0] < BURST // 3:
                time.sleep(0.002)
            first.kill()
            killed_at = answered[0]
            second = SchedulerServer(database=database, env=env, port=first.port, log=tmp_path / "second.log")
            with second:
                for w in work:
                    w.result()
                assert killed_at < BURST, "the burst finished before the kill"
                every = every_reservation(database)
                rows = {r["key"]: r for r in every if r["tenant"] != "mallory"}
                hers = [r for r in every if r["tenant"] == "mallory"]
                assert {r.status_code for r in answers.values()} == {200}
                # PUT: her own reservation of the key, beside the owner's; PATCH and DELETE: hers when
                # she booked one, else 404, as for an absent key (the owner's is not hers to know of)
                for r in attacks:
                    assert r.status_code in (200, 404), f"a takeover was not refused: {r.status_code} {r.text}"
                    if r.status_code == 200 and "tenant" in r.json():
                        assert r.json()["tenant"] == "mallory", r.text
                    assert "belongs to" not in r.text and '"tenant":"team-' not in r.text, r.text  # no owner named
                assert {r.status_code for r in attacks} == {200, 404}
                assert hers and all(r["path"] == "pulumi" for r in hers)
                assert set(rows) == set(answers)
                for k, row in rows.items():
                    assert row["tenant"] == k.split("/")[0] and row["path"] == "pulumi", k
                    assert row["phase"] == "Scheduled" and row["answer"] == answers[k].json(), k
                for k, first_answer in answers.items():
                    tenant = k.split("/")[0]
                    again = send_until_answered(
                        second.url, "PUT", f"/reservations/{k}", tokens[tenant], burst_booking(tenant), give_up
                    )
                    assert again.status_code == 200 and again.json() == first_answer.json(), k
                    assert again.headers.get("idempotent-replayed") == "true", k
                print(f"\nkill -9 after {killed_at} of {BURST} owner answers; {len(attacks)} takeovers, all refused")
    finally:
        first.stop()
