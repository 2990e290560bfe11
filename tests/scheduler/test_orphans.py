"""Orphaned bookings (greenops/reservations/orphans.py) on the real service: the Scheduled
Pulumi-path bookings of a stack that no Pulumi pass has seen for the grace are released with a
reason that says so; a stack that still runs, a booking that is running, and another tenant's
stack are left alone, and no tenant can keep another's stack alive."""

from __future__ import annotations

import secrets
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest

from greenops.common.clock import stamp
from greenops.local.scheduler import SchedulerServer
from greenops.placing import SchedulerClient
from greenops.provider.heartbeat import mark_stack_seen

pytestmark = pytest.mark.integration

T0 = datetime(2026, 11, 23, 9, 0, tzinfo=UTC)
DAY = timedelta(days=1)


class Record:
    """One reservation record, served by a scheduler process started at whatever time a step needs."""

    def __init__(self) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="greenops-orphans-"))
        self.database = f"sqlite:///{self.folder / 'record.db'}"
        self.admin = secrets.token_hex(24)

    def at(self, now: datetime, sweep_seconds: float = 0) -> SchedulerServer:
        env = {"GREENOPS_NOW": stamp(now), "GREENOPS_SCHEDULER_ORPHAN_SWEEP_SECONDS": str(sweep_seconds)}
        return SchedulerServer(database=self.database, admin_token=self.admin, env=env, log=self.folder / "s.log")


def book(s: SchedulerServer, token: str, key: str, now: datetime) -> None:
    body = {
        "key": key,
        "path": "pulumi",
        "eligible_regions": ["FR"],
        "deadline": stamp(now + 3 * DAY),
        "duration": 2,
        "cpu": 2,
        "memory": 4,
    }
    r = httpx.post(f"{s.url}/scheduling", json=body, headers={"Authorization": f"Bearer {token}"}, timeout=15)
    assert r.status_code == 200, r.text


def reservation(s: SchedulerServer, key: str) -> dict:
    r = httpx.get(f"{s.url}/reservations/{key}", headers=s.admin_headers, timeout=15)
    assert r.status_code == 200, r.text
    return r.json()


def seen(s: SchedulerServer, token: str, stack: str, tenant: str | None = None) -> httpx.Response:
    params = {"tenant": tenant} if tenant else {}
    return httpx.put(f"{s.url}/stacks/{stack}", params=params, headers={"Authorization": f"Bearer {token}"}, timeout=15)


def test_a_removed_stacks_bookings_are_swept_and_nothing_else():
    record = Record()
    with record.at(T0) as s:
        alpha, beta = s.issue("alpha-ci", ["alpha"]), s.issue("beta-ci", ["beta"])
        for key in ("gone/w1/d1", "gone/w2/d2", "live/w1/d3", "gone/running/d4"):
            book(s, alpha, key, T0)
        book(s, beta, "gone/w1/d5", T0)  # beta's own stack of the same name
        r = httpx.patch(
            f"{s.url}/reservations/gone/running/d4",
            json={"phase": "Running", "reason": "its VM runs"},
            headers={"Authorization": f"Bearer {alpha}"},
            timeout=15,
        )
        assert r.status_code == 200, r.text
    with record.at(T0 + DAY + timedelta(hours=1)) as s:
        # live's pass runs through the provider's heartbeat, as `pulumi up` would; twice, one call
        props = {"schedulerUrl": s.url, "stack": "live"}
        client = lambda: SchedulerClient(s.url, token=alpha, attempts=1)  # noqa: E731
        assert mark_stack_seen(props, "alpha", client) and not mark_stack_seen(props, "alpha", client)
        # beta cannot keep alpha's stack alive: not by naming alpha, and its own "gone" is its own
        assert seen(s, beta, "gone", tenant="alpha").status_code == 403
        assert seen(s, beta, "gone").status_code == 200
        # and a tenant's token cannot sweep
        assert httpx.post(f"{s.url}/sweeps/orphans", headers={"Authorization": f"Bearer {alpha}"}).status_code == 403
        r = httpx.post(f"{s.url}/sweeps/orphans", headers=s.admin_headers, timeout=15)
        assert r.status_code == 200, r.text
        released = {(o["tenant"], o["key"]) for o in r.json()["released"]}
        assert released == {("alpha", "gone/w1/d1"), ("alpha", "gone/w2/d2")}
        row = reservation(s, "gone/w1/d1?tenant=alpha")
        assert row["phase"] == "Released"
        assert "stack gone of tenant alpha has not been seen" in row["reason"] and "orphan sweep" in row["reason"]
        assert reservation(s, "live/w1/d3?tenant=alpha")["phase"] == "Scheduled"
        assert reservation(s, "gone/running/d4?tenant=alpha")["phase"] == "Running"
        assert reservation(s, "gone/w1/d5?tenant=beta")["phase"] == "Scheduled"
        # a second sweep finds nothing more: nothing is released twice
        again = httpx.post(f"{s.url}/sweeps/orphans", headers=s.admin_headers, timeout=15).json()
        assert again["released"] == []


def test_within_the_grace_nothing_is_swept_and_past_it_the_service_sweeps_on_its_own():
    record = Record()
    with record.at(T0) as s:
        alpha = s.issue("alpha-ci", ["alpha"])
        book(s, alpha, "quiet/w1/d1", T0)
    with record.at(T0 + DAY - timedelta(minutes=5)) as s:
        assert httpx.post(f"{s.url}/sweeps/orphans", headers=s.admin_headers, timeout=15).json()["released"] == []
    with record.at(T0 + DAY + timedelta(minutes=5), sweep_seconds=0.5) as s:
        deadline = time.monotonic() + 20
        while reservation(s, "quiet/w1/d1?tenant=alpha")["phase"] != "Released":
            assert time.monotonic() < deadline, "the service's own sweep did not release the orphan"
            time.sleep(0.2)
