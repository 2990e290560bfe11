"""The scheduler's /metrics after known traffic, on the real process: every booking result counted
under its tenant, the record's gauges, carbon that agrees with the report's own accounting of the
same reservations, and a real Prometheus scraping it with a read token."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import httpx
import pytest

from greenops.insight.record_rows import placement_row
from greenops.insight.report import account
from greenops.local.scheduler import SchedulerServer
from greenops.reservations.slots import slots_of
from tests.support.bookings import NOW, booking
from tests.support.prometheus import PrometheusServer, Target, by_label
from tests.support.scrape import Scrape, scrape

pytestmark = pytest.mark.integration

REGIONS = {"FR": "gcp/europe-west9", "DE": "azure/germanywestcentral"}
CAPACITY = 512  # SchedulerServer's default vCPUs per zone-hour
# (tenant, result) -> how many of the traffic below end so; every request is on the pulumi path
EXPECTED = {
    ("team-a", "placed"): 3,
    ("team-a", "replayed"): 1,
    ("team-a", "refused"): 1,  # 403: a body naming a tenant its credential does not act for
    ("team-b", "placed"): 1,
    ("team-b", "conflict"): 1,  # 409: no zone-hour holds 600 vCPU
    ("media", "placed"): 1,
    ("media", "refused"): 1,  # 409: media's quota in policy is 128 vCPU, all of it booked
    ("team-c", "invalid"): 6,  # 422: an unknown zone
    ("team-c", "rate_limited"): 1,  # the 7th request in a minute, at 6/minute
}


@dataclass
class Traffic:
    sched: SchedulerServer
    reader: str  # read, every tenant: Prometheus's credential
    reader_a: str  # read, team-a only
    team_a: str
    placed: list[dict]  # the answers of the bookings that were placed


def _put(sched: SchedulerServer, token: str, key: str, body: dict) -> httpx.Response:
    headers = {"Authorization": f"Bearer {token}"}
    return httpx.put(f"{sched.url}/reservations/{key}", json=body, headers=headers, timeout=30)


def _workload(name: str, **over: object) -> dict:
    # what a Placement sends: the zones mapped to regions, and the workload (the record prices its memory)
    return booking(regions=REGIONS, workload={"name": name, "memory": 8}, **over)


@pytest.fixture(scope="module")
def traffic(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Traffic]:
    log = tmp_path_factory.mktemp("metrics") / "scheduler.log"
    env = {"GREENOPS_NOW": NOW, "GREENOPS_SCHEDULER_RATE_LIMIT": "6/minute"}
    with SchedulerServer(log=log, env=env) as sched:
        token = {t: sched.issue(f"{t}-ci", [t], paths=["pulumi"]) for t in ("team-a", "team-b", "media", "team-c")}
        placed = []
        for i in range(3):
            r = _put(sched, token["team-a"], f"team-a/wl-{i}", _workload(f"wl-{i}"))
            assert r.status_code == 200, r.text
            placed.append(r.json())
        again = _put(sched, token["team-a"], "team-a/wl-0", _workload("wl-0"))
        assert again.headers["idempotent-replayed"] == "true"
        assert _put(sched, token["team-a"], "team-a/x", _workload("x", tenant="team-b")).status_code == 403

        r = _put(sched, token["team-b"], "team-b/wl-0", _workload("wl-0"))
        assert r.status_code == 200, r.text
        placed.append(r.json())
        assert _put(sched, token["team-b"], "team-b/huge", _workload("huge", cpu=600)).status_code == 409

        r = _put(sched, token["media"], "media/wl-0", _workload("wl-0", cpu=128))
        assert r.status_code == 200, r.text
        placed.append(r.json())
        quota = _put(sched, token["media"], "media/wl-1", _workload("wl-1"))
        assert quota.status_code == 409 and "quota" in quota.text

        headers = {"Authorization": f"Bearer {token['team-c']}"}
        codes = [
            httpx.post(
                f"{sched.url}/scheduling", json=booking(eligible_regions=["XX"]), headers=headers, timeout=15
            ).status_code
            for _ in range(7)
        ]
        assert codes == [422] * 6 + [429]
        yield Traffic(
            sched,
            reader=sched.issue("prometheus", None, paths=["api"], role="read"),
            reader_a=sched.issue("team-a-viewer", ["team-a"], paths=["api"], role="read"),
            team_a=token["team-a"],
            placed=placed,
        )


@pytest.fixture(scope="module")
def scraped(traffic: Traffic) -> Scrape:
    return scrape(traffic.sched.url, traffic.reader)


def test_bookings_are_counted_by_path_tenant_and_result(scraped: Scrape):
    counted = {
        (dict(labels)["tenant"], dict(labels)["result"]): v
        for (name, labels), v in scraped.samples.items()
        if name == "greenops_scheduler_bookings_total"
    }
    assert counted == EXPECTED
    assert set(scraped.by("greenops_scheduler_bookings_total", "path").keys()) == {"pulumi"}


def test_request_latency_is_by_route_template_method_and_outcome(scraped: Scrape):
    count = "greenops_scheduler_request_duration_seconds_count"
    # the key is in the path; the label is the route's template
    assert scraped.value(count, route="/reservations/{key}", method="PUT", outcome="ok") == 6
    assert scraped.value(count, route="/reservations/{key}", method="PUT", outcome="client_error") == 3
    assert scraped.value(count, route="/scheduling", method="POST", outcome="client_error") == 7
    routes = {dict(labels)["route"] for name, labels in scraped.samples if name == count}
    assert not any("team-" in r or "media" in r for r in routes), routes


def test_the_record_gauges_read_the_record(traffic: Traffic, scraped: Scrape):
    phases = scraped.by("greenops_scheduler_reservations", "phase")
    assert phases == {
        "Pending": 0,
        "Scheduled": 5,
        "Provisioning": 0,
        "Running": 0,
        "Completed": 0,
        "Failed": 0,
        "Released": 0,
    }
    # nothing is late at NOW: every run starts at or after it
    assert scraped.by("greenops_scheduler_overdue_gates", "path") == {"pulumi": 0, "cluster": 0, "api": 0}
    # the busiest zone-hour, from the answers: every placed job's vCPUs over each hour it runs
    used: dict[str, dict[int, float]] = defaultdict(lambda: defaultdict(float))
    for answer, cpu in zip(traffic.placed, [4, 4, 4, 4, 128], strict=True):
        start = datetime.fromisoformat(answer["scheduling_time"]).timestamp()
        for slot in slots_of(start, start + 2 * 3600):
            used[answer["scheduling_location"]][slot] += cpu
    expected = {zone: max(hours.values()) / CAPACITY for zone, hours in used.items()}
    assert scraped.by("greenops_scheduler_capacity_used_ratio", "zone") == pytest.approx(expected)


def test_carbon_counters_agree_with_the_reports_accounting_of_the_record(traffic: Traffic, scraped: Scrape):
    listed = httpx.get(
        f"{traffic.sched.url}/reservations",
        params={"all": "true", "detail": "true"},
        headers={"Authorization": f"Bearer {traffic.reader}"},
        timeout=15,
    ).json()["reservations"]
    rows = account([placement_row(r) for r in listed])
    assert len(rows) == 5 and all(r["expected_g"] is not None for r in rows)
    expected, baseline = sum(r["expected_g"] for r in rows), sum(r["baseline_g"] for r in rows)
    saved = sum(max(0.0, r["baseline_g"] - r["expected_g"]) for r in rows)
    assert expected > 0
    assert scraped.value("greenops_scheduler_carbon_expected_grams_total", path="pulumi") == pytest.approx(expected)
    assert scraped.value("greenops_scheduler_carbon_baseline_grams_total", path="pulumi") == pytest.approx(baseline)
    assert scraped.value("greenops_scheduler_carbon_saved_grams_total", path="pulumi") == pytest.approx(saved)


def test_forecast_calls_are_timed_by_source(scraped: Scrape):
    # two zones for each request that reached the search: 5 placed, the 409 for capacity and the one
    # for quota (checked when booking); the replay, the 403 and the unknown zones asked for none
    assert scraped.value("greenops_scheduler_forecast_duration_seconds_count", source="profiles") == 14
    assert scraped.value("greenops_scheduler_forecast_errors_total", source="profiles") == 0
    assert scraped.value("greenops_scheduler_database_retries_total", operation="commit") == 0
    assert scraped.by("greenops_scheduler_database_errors_total", "operation") == {}


def test_metrics_need_a_read_credential_for_every_tenant(traffic: Traffic):
    url = f"{traffic.sched.url}/metrics"
    for token in (None, "not-a-token"):
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        r = httpx.get(url, headers=headers, timeout=15)
        assert r.status_code == 401 and r.headers["www-authenticate"] == "Bearer"
    for scoped in (traffic.reader_a, traffic.team_a):
        r = httpx.get(url, headers={"Authorization": f"Bearer {scoped}"}, timeout=15)
        assert r.status_code == 403 and "every tenant" in r.json()["detail"]
    assert httpx.get(url, headers=traffic.sched.admin_headers, timeout=15).status_code == 200


def test_a_real_prometheus_scrapes_the_scheduler_with_a_read_token(traffic: Traffic, tmp_path: Path):
    totals: dict[str, float] = defaultdict(float)
    for (_, result), n in EXPECTED.items():
        totals[result] += n
    with PrometheusServer([Target("scheduler", traffic.sched.url, traffic.reader)], workdir=tmp_path) as prom:
        query = "sum by (result) (greenops_scheduler_bookings_total)"
        assert by_label(prom.wait_for(query, lambda r: by_label(r, "result") == totals), "result") == totals
        assert by_label(prom.query('up{job="scheduler"}'), "job") == {"scheduler": 1}
        refused = prom.query('greenops_scheduler_bookings_total{tenant="media", result="refused"}')
        assert [float(s["value"][1]) for s in refused] == [1]
        scheduled = prom.query('greenops_scheduler_reservations{phase="Scheduled"}')
        assert [float(s["value"][1]) for s in scheduled] == [5]
