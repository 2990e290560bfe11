"""The queue on the real service (greenops/scheduler/queueing.py, greenops/reservations/queue.py): a
request that asks to wait, that no window has room for now but that could have one before its
deadline, is recorded as Pending with its position and reason, and is admitted as releases free
room: by priority class, fairly across tenants, once each. What could never fit is refused as before;
a request that does not ask to wait gets the thesis contract's 409."""

from __future__ import annotations

import sqlite3
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest

from greenops.common.clock import set_clock_file, stamp
from greenops.local.scheduler import SchedulerServer

pytestmark = pytest.mark.integration

T0 = datetime(2026, 11, 23, 9, 0, tzinfo=UTC)
HOUR = timedelta(hours=1)
# Every request here is 8 vCPU in FR for 2 h with a 3 h window: each start takes the hour after T0,
# so one fills the zone.
POLICY = """
default_tenant_vcpu_quota: null
tenant_rules:
  gold:
    priority_class: critical
  alpha:
    priority_class: standard
  beta:
    priority_class: standard
"""


class Record:
    """One reservation record, served by scheduler processes started at whatever time a step needs."""

    def __init__(self, policy: str = POLICY, database: str | None = None) -> None:
        self.database = database
        self.folder = Path(tempfile.mkdtemp(prefix="greenops-queue-"))
        self.file = self.folder / "record.db"
        (self.folder / "policy.yaml").write_text(policy)
        self.admin = "a" * 32
        self.tokens: dict[str, str] = {}
        self.clock = self.folder / "now"
        self.now = T0

    def tick(self, seconds: float = 1) -> datetime:
        """Move the service's clock on (each request here is one tick after the last: its own instant)."""
        self.now += timedelta(seconds=seconds)
        set_clock_file(self.clock, self.now)
        return self.now

    def at(self, now: datetime, capacity: float = 8, **env: str) -> SchedulerServer:
        self.now = now
        set_clock_file(self.clock, now)
        return SchedulerServer(
            database=self.database or f"sqlite:///{self.file}",
            admin_token=self.admin,
            capacity_vcpu=capacity,
            env={
                "GREENOPS_CLOCK_FILE": str(self.clock),
                "GREENOPS_SCHEDULER_POLICY_CONFIG": str(self.folder / "policy.yaml"),
                "GREENOPS_SCHEDULER_QUEUE_SECONDS": "0",  # admitted on releases only: each step is deliberate
                **env,
            },
            log=self.folder / f"s-{len(list(self.folder.glob('s-*.log')))}.log",
        )

    def token(self, s: SchedulerServer, tenant: str) -> str:
        if tenant not in self.tokens:
            self.tokens[tenant] = s.issue(f"{tenant}-ci", [tenant])
        return self.tokens[tenant]


def ask(record: Record, s: SchedulerServer, token: str, key: str, **over) -> httpx.Response:
    """A request of ``key``, one tick after the last."""
    record.tick()
    body = {
        "key": key,
        "eligible_regions": ["FR"],
        "deadline": stamp(T0 + 3 * HOUR),
        "duration": 2,
        "cpu": 8,
        "memory": 16,
        "queue": True,
    } | over
    return httpx.put(f"{s.url}/reservations/{key}", json=body, headers={"Authorization": f"Bearer {token}"}, timeout=30)


def reservation(s: SchedulerServer, key: str, tenant: str) -> dict:
    r = httpx.get(f"{s.url}/reservations/{key}", params={"tenant": tenant}, headers=s.admin_headers, timeout=15)
    assert r.status_code == 200, r.text
    return r.json()


def release(s: SchedulerServer, token: str, key: str) -> None:
    r = httpx.delete(f"{s.url}/reservations/{key}", headers={"Authorization": f"Bearer {token}"}, timeout=15)
    assert r.status_code == 200, r.text


def wait_for(predicate, timeout: float = 20.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if found := predicate():
            return found
        time.sleep(0.1)
    raise AssertionError("timed out")


def phases(s: SchedulerServer, keys: dict[str, str]) -> dict[str, str]:
    return {k: reservation(s, k, t)["phase"] for k, t in keys.items()}


def test_a_full_zone_queues_in_priority_and_fair_order_and_releases_admit_one_at_a_time():
    record = Record()
    with record.at(T0) as s:
        tok = {t: record.token(s, t) for t in ("alpha", "beta", "gold", "ops")}
        assert ask(record, s, tok["ops"], "holder").status_code == 200  # fills FR for the whole window
        # without queue: the thesis contract's 409, nothing recorded
        plain = ask(record, s, tok["alpha"], "plain", queue=False)
        assert plain.status_code == 409, plain.text
        assert httpx.get(f"{s.url}/reservations/plain", headers=s.admin_headers).status_code == 404
        # a burst: alpha sends three, beta one, gold one; alpha's last asks for the batch class
        order = [("a1", "alpha", None), ("a2", "alpha", None), ("b1", "beta", None), ("g1", "gold", None)]
        order.append(("a3", "alpha", "batch"))
        for key, tenant, klass in order:
            r = ask(record, s, tok[tenant], key, **({"priority_class": klass} if klass else {}))
            assert r.status_code == 202, r.text
            body = r.json()
            assert body["phase"] == "Pending" and body["key"] == key
            assert "no zone has a start" in body["reason"].lower() or "capacity" in body["reason"].lower(), body
        keys = {k: t for k, t, _ in order}
        # critical first; within standard, the tenant holding least and served least recently first:
        # a tenant's oldest before anybody's second (b1 before a2)
        positions = {k: reservation(s, k, t)["position"] for k, t in keys.items()}
        assert positions == {"g1": 1, "a1": 2, "b1": 3, "a2": 4, "a3": 5}, positions
        g1 = reservation(s, "g1", "gold")
        assert (g1["priority_class"], g1["priority"], g1["zone"]) == ("critical", 1000, "")
        listed = httpx.get(f"{s.url}/reservations", params={"phase": "Pending"}, headers=s.admin_headers).json()
        assert [r["key"] for r in sorted(listed["reservations"], key=lambda r: r["position"])] == sorted(
            positions, key=positions.__getitem__
        )
        # the dashboard shows the queue in admission order, apart from the placements
        page = httpx.get(f"{s.url}/dashboard", headers=s.admin_headers, timeout=30)
        assert page.status_code == 200, page.text
        queue = page.text.split('<table id="queue">')[1].split("</table>")[0]
        shown = [row.split('data-key="')[1].split('"')[0] for row in queue.split("<tr ")[1:]]
        assert shown == sorted(positions, key=positions.__getitem__), shown
        assert "critical" in queue and 'data-key="g1"' not in page.text.split('<table id="placements">')[1]
        # a retry of a waiting request keeps its place and records nothing new
        again = ask(record, s, tok["alpha"], "a1")
        assert again.status_code == 202 and again.json()["position"] == 2
        assert reservation(s, "a1", "alpha")["revision"] == 1
        # each release admits the next, and only it: the zone holds one at a time
        expected = ["g1", "a1", "b1", "a2", "a3"]
        holder = ("holder", "ops")
        for nxt in expected:
            release(s, tok[holder[1]], holder[0])
            wait_for(lambda nxt=nxt: reservation(s, nxt, keys[nxt])["phase"] == "Scheduled")
            now = phases(s, keys)
            assert [k for k, p in now.items() if p == "Scheduled"] == [nxt], now
            holder = (nxt, keys[nxt])
        admitted = reservation(s, "a3", "alpha")
        assert admitted["zone"] == "FR" and admitted["position"] is None
        metrics = httpx.get(f"{s.url}/metrics", headers=s.admin_headers).text
        assert 'greenops_scheduler_queue_left_total{outcome="admitted",path="api"} 5.0' in metrics


def test_what_could_never_fit_is_refused_and_what_waits_can_be_released_or_changed():
    record = Record()
    with record.at(T0) as s:
        alpha, beta = record.token(s, "alpha"), record.token(s, "beta")
        assert ask(record, s, alpha, "holder").status_code == 200
        # more than a zone ever holds, or a run longer than its window: 409 (422) as before, not queued
        never = ask(record, s, alpha, "huge", cpu=9)
        assert never.status_code == 409, never.text
        assert ask(record, s, alpha, "long", duration=4).status_code == 422
        # above its tenant's class: refused naming the rule; an unknown class named
        above = ask(record, s, alpha, "above", priority_class="critical")
        assert above.status_code == 403 and "priority_class standard" in above.text, above.text
        unknown = ask(record, s, alpha, "unknown", priority_class="urgent")
        assert unknown.status_code == 422 and "priority_class" in unknown.text
        # a dry run says it would wait, and records nothing
        dry = ask(record, s, alpha, "dry", dry_run=True)
        assert dry.status_code == 202 and dry.json()["position"] is None
        assert httpx.get(f"{s.url}/reservations/dry", headers=s.admin_headers).status_code == 404
        # a waiting request has no placement to run, and can be released by its owner only
        assert ask(record, s, alpha, "w1").status_code == 202
        run = httpx.patch(
            f"{s.url}/reservations/w1",
            json={"phase": "Running", "reason": "forged"},
            headers={"Authorization": f"Bearer {alpha}"},
        )
        assert run.status_code == 409 and "Pending" in run.text, run.text
        assert httpx.delete(f"{s.url}/reservations/w1", headers={"Authorization": f"Bearer {beta}"}).status_code == 404
        release(s, alpha, "w1")
        assert reservation(s, "w1", "alpha")["phase"] == "Released"
        # a changed request replaces the waiting one (a new revision, a new place at the back)
        assert ask(record, s, alpha, "w2").status_code == 202
        assert ask(record, s, beta, "w3").status_code == 202
        changed = ask(record, s, alpha, "w2", memory=12)
        assert changed.status_code == 202 and changed.json()["position"] == 2, changed.text
        assert reservation(s, "w2", "alpha")["revision"] == 2
        # the released w1 is never admitted: only w3, then w2, as room frees
        release(s, alpha, "holder")
        wait_for(lambda: reservation(s, "w3", "beta")["phase"] == "Scheduled")
        assert reservation(s, "w1", "alpha")["phase"] == "Released"
        assert reservation(s, "w2", "alpha")["phase"] == "Pending"


def test_a_tenants_queue_is_bounded():
    record = Record()
    with record.at(T0, GREENOPS_SCHEDULER_QUEUE_MAX_PER_TENANT="2") as s:
        alpha, beta = record.token(s, "alpha"), record.token(s, "beta")
        assert ask(record, s, alpha, "holder").status_code == 200
        assert [ask(record, s, alpha, f"w{i}").status_code for i in range(3)] == [202, 202, 409]
        full = ask(record, s, alpha, "w2")
        assert "2 requests waiting" in full.json()["detail"]
        assert ask(record, s, beta, "w0").status_code == 202  # another tenant's queue is its own


def test_a_quota_burst_completes_in_priority_order_before_its_deadlines():
    """Six requests of 8 vCPU against a tenant quota of 16: two are placed, four wait. As each pair's
    runs end, the next pair is admitted from the queue, the standard class before the batch one, and
    every run ends before its deadline."""
    policy = POLICY.replace("default_tenant_vcpu_quota: null", "default_tenant_vcpu_quota: 16")
    record = Record(policy)
    deadline = T0 + 12 * HOUR
    keys = [f"job{i}" for i in range(6)]
    classes = ["standard", "standard", "batch", "batch", "standard", "standard"]
    admitted: list[str] = []
    with record.at(T0, capacity=512) as s:
        alpha = record.token(s, "alpha")
        for key, klass in zip(keys, classes, strict=True):
            r = ask(record, s, alpha, key, deadline=stamp(deadline), priority_class=klass)
            assert r.status_code in (200, 202), r.text
            if r.status_code == 200:
                admitted.append(key)
            else:
                assert "quota" in r.json()["reason"], r.text
        assert admitted == ["job0", "job1"]
        for _ in range(len(keys)):
            rows = {k: reservation(s, k, "alpha") for k in keys}
            placed = [r for r in rows.values() if r["phase"] == "Scheduled"]
            if not placed:
                break
            # the placed runs run and end; the clock moves to the last of their ends
            record.tick((max(datetime.fromisoformat(r["end"]) for r in placed) - record.now).total_seconds())
            for r in placed:
                for phase in ("Running", "Completed"):
                    done = httpx.patch(
                        f"{s.url}/reservations/{r['key']}",
                        json={"phase": phase, "reason": "its run"},
                        headers={"Authorization": f"Bearer {alpha}"},
                    )
                    assert done.status_code == 200, done.text
            waiting = [k for k, r in rows.items() if r["phase"] == "Pending"]
            if waiting:
                now = wait_for(lambda w=waiting: [k for k in w if reservation(s, k, "alpha")["phase"] == "Scheduled"])
                admitted += sorted(now)
        rows = {k: reservation(s, k, "alpha") for k in keys}
    assert all(r["phase"] == "Completed" for r in rows.values()), rows
    assert all(datetime.fromisoformat(r["end"]) <= deadline for r in rows.values()), rows
    # the standard ones that waited (job4, job5) were admitted before the batch ones (job2, job3)
    assert admitted == ["job0", "job1", "job4", "job5", "job2", "job3"], admitted


def test_a_request_that_can_no_longer_run_before_its_deadline_leaves_the_queue_failed():
    record = Record()
    with record.at(T0, GREENOPS_SCHEDULER_QUEUE_SECONDS="0.2") as s:
        alpha = record.token(s, "alpha")
        assert ask(record, s, alpha, "holder").status_code == 200
        assert ask(record, s, alpha, "late").status_code == 202
        # still room for its 2 h run before T0 + 3 h: it keeps waiting
        record.tick(50 * 60)
        time.sleep(1)
        assert reservation(s, "late", "alpha")["phase"] == "Pending"
        # past the last start that fits: Failed, saying how long it waited and why
        record.tick(20 * 60)
        failed = wait_for(lambda: (r := reservation(s, "late", "alpha"))["phase"] == "Failed" and r)
        assert "waited in the queue from 2026-11-23T09:00" in failed["reason"], failed["reason"]
        assert "does not fit" in failed["reason"] and "deadline" in failed["reason"]
        metrics = httpx.get(f"{s.url}/metrics", headers=s.admin_headers).text
        assert 'greenops_scheduler_queue_left_total{outcome="expired",path="api"} 1.0' in metrics


def test_a_rule_set_while_it_waits_refuses_it_by_name():
    record = Record()
    with record.at(T0) as s:
        alpha = record.token(s, "alpha")
        assert ask(record, s, alpha, "holder").status_code == 200
        assert ask(record, s, alpha, "big").status_code == 202
    # the platform team caps alpha's VMs at 4 vCPU; the service restarts with the new rules
    (record.folder / "policy.yaml").write_text(
        POLICY.replace("priority_class: standard\n  beta", "priority_class: standard\n    max_cpu: 4\n  beta", 1)
    )
    with record.at(record.now) as s:
        refused = wait_for(lambda: (r := reservation(s, "big", "alpha"))["phase"] == "Failed" and r)
        assert "refused while it waited in the queue" in refused["reason"]
        assert "max_cpu 4" in refused["reason"], refused["reason"]


def test_a_waiting_request_the_scheduler_can_no_longer_read_is_failed_and_the_queue_goes_on():
    """A Pending row whose recorded request no longer validates (written by another version, or by
    hand) is failed with the reason and counted, and the requests behind it are admitted."""
    record = Record()
    with record.at(T0) as s:
        alpha = record.token(s, "alpha")
        assert ask(record, s, alpha, "holder").status_code == 200
        assert ask(record, s, alpha, "broken").status_code == 202
        assert ask(record, s, alpha, "fine").status_code == 202
        with sqlite3.connect(record.file) as db:  # first in the queue, and unreadable
            db.execute(
                "UPDATE reservations SET priority = 1000, request = json_remove(request, '$.cpu') WHERE key = 'broken'"
            )
        release(s, alpha, "holder")
        wait_for(lambda: reservation(s, "fine", "alpha")["phase"] == "Scheduled")
        broken = reservation(s, "broken", "alpha")
        assert broken["phase"] == "Failed" and "cpu: Field required" in broken["reason"], broken["reason"]
        metrics = httpx.get(f"{s.url}/metrics", headers=s.admin_headers).text
        assert 'greenops_scheduler_queue_left_total{outcome="refused",path="api"} 1.0' in metrics
