"""Hostile input against the real scheduler process: oversized, malformed and non-string bodies are
refused with the limit or field named, and a bad row already in the record never takes a view down."""

from __future__ import annotations

import json
import time

import httpx
import pytest
from sqlalchemy import update

from greenops.reservations import ReservationStore
from greenops.reservations.tables import reservations
from greenops.scheduler.limits import MAX_BODY_BYTES
from greenops.scheduler.recorded import MAX_WORKLOAD_BYTES
from tests.support.bookings import booking
from tests.support.tenancy import Tenancy

pytestmark = pytest.mark.integration


def test_a_30_mb_body_is_413_naming_the_limit(tenancy: Tenancy):
    huge = booking(key="team-a/huge", workload={"name": "x", "blob": "y" * 30_000_000})
    r = tenancy.call("POST", "/scheduling", tenancy.team_a, content=json.dumps(huge))
    assert (
        r.status_code == 413 and r.json()["detail"] == f"request body: larger than the limit of {MAX_BODY_BYTES} bytes"
    )
    assert tenancy.row("team-a/huge") is None


def test_a_streamed_body_without_a_length_is_cut_off_at_the_limit(tenancy: Tenancy):
    def chunks():
        yield b'{"eligible_regions": ["FR"], "workload": {"name": "'
        for _ in range(64):
            yield b"z" * 65536  # 4 MiB in all, never announced
        yield b'"}}'

    r = httpx.post(
        f"{tenancy.sched.url}/scheduling",
        content=chunks(),
        headers={"Authorization": f"Bearer {tenancy.team_a}", "Content-Type": "application/json"},
        timeout=15,
    )
    assert r.status_code == 413, r.text


def test_a_stored_workload_is_bounded_and_typed(tenancy: Tenancy):
    big = tenancy.call(
        "PUT", "/reservations/team-a/w", tenancy.team_a, json=booking(workload={"name": "w", "notes": "n" * 20_000})
    )
    assert big.status_code == 422 and f"workload is larger than {MAX_WORKLOAD_BYTES} bytes" in big.json()["detail"]
    numeric = tenancy.call("PUT", "/reservations/team-a/w", tenancy.team_a, json=booking(workload={"name": 5}))
    assert numeric.status_code == 422 and numeric.json()["detail"].startswith("workload.name: ")
    assert tenancy.row("team-a/w") is None


def test_a_string_memory_for_ten_thousand_jobs_fails_fast(tenancy: Tenancy):
    started = time.monotonic()
    r = tenancy.call("POST", "/scheduling", tenancy.team_a, json=booking(memory="8" * 1000, number_of_jobs=10000))
    assert r.status_code == 422 and r.json()["detail"].startswith("memory: ")
    assert len(r.text) < 2000 and time.monotonic() - started < 2


def test_a_vanishing_cpu_is_refused(tenancy: Tenancy):
    r = tenancy.call("POST", "/scheduling", tenancy.team_a, json=booking(cpu=1e-300, number_of_jobs=10000))
    assert r.status_code == 422 and r.json()["detail"].startswith("cpu: ")


def test_a_bad_row_already_in_the_record_never_takes_the_views_down(tenancy: Tenancy):
    assert (
        tenancy.call(
            "PUT", "/reservations/team-a/legacy", tenancy.team_a, json=booking(workload={"name": "ok"})
        ).status_code
        == 200
    )
    # a row written before the schema existed (or by hand): its workload's name is a number and its
    # explanation a list
    store = ReservationStore(tenancy.sched.database or "")
    try:
        row = store.get("team-a", "team-a/legacy")
        assert row is not None
        request = {
            **row["request"],
            "workload": {"name": 12345, "memory": "lots"},
            "explanation": ["not", "an", "object"],
        }
        with store.writing("hand_edit") as conn:
            conn.execute(update(reservations).where(reservations.c.key == "team-a/legacy").values(request=request))
    finally:
        store.close()
    for path in ("/dashboard", "/dashboard/api/placements", "/reservations?detail=true", "/reservations/team-a/legacy"):
        r = tenancy.call("GET", path, tenancy.reader)
        assert r.status_code == 200, (path, r.text[:300])
    shown = tenancy.call("GET", "/reservations/team-a/legacy", tenancy.reader).json()
    assert shown["workload"] is None and shown["explanation"] is None
    names = {
        p["key"]: p["workload"]
        for p in tenancy.call("GET", "/dashboard/api/placements", tenancy.reader).json()["placements"]
    }
    assert names["team-a/legacy"] == "team-a/legacy"  # the key stands in for a name it cannot read
