"""The real scheduler service, started as its README says, over loopback."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import httpx
import pytest

from greenops.common.clock import stamp
from greenops.local.scheduler import SchedulerServer

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def service():
    with SchedulerServer(capacity_vcpu=64) as s:
        # a tenant's API token, as `greenops token issue` makes one: what a real caller presents
        s.headers = {"Authorization": f"Bearer {s.issue('service-test', ['default'])}"}
        yield s


def iso(dt: datetime) -> str:
    return stamp(dt)


def thesis_body(**over):
    body = {
        "number_of_jobs": 1,
        "eligible_regions": ["FR", "IT-NO", "FI"],
        "deadline": iso(datetime.now(UTC) + timedelta(days=2)),
        "duration": 6,
        "cpu": 4,
        "memory": 8,
        "req_timeout": 10,
    }
    body.update(over)
    return body


def post(service, body):
    return httpx.post(f"{service.url}/scheduling", json=body, timeout=15, headers=service.headers)


def test_thesis_request(service):
    before = datetime.now(UTC).replace(microsecond=0)
    body = thesis_body()
    r = post(service, body)
    assert r.status_code == 200, r.text
    out = r.json()
    assert out["scheduling_location"] in body["eligible_regions"]
    start = datetime.fromisoformat(out["scheduling_time"].replace("Z", "+00:00"))
    deadline = datetime.fromisoformat(body["deadline"].replace("Z", "+00:00"))
    assert before <= start and start + timedelta(hours=6) <= deadline + timedelta(seconds=1)
    assert out["expected_intensity"] <= out["baseline_intensity"]
    assert out["saving_percent"] == pytest.approx(
        100 * (1 - out["expected_intensity"] / out["baseline_intensity"]), abs=0.05
    )
    assert len(out["placements"]) == 1


def test_baseline_at_the_origin_zone(service):
    out = post(service, thesis_body(origin_zone="DE")).json()
    assert out["baseline"] == "run now in DE" and out["baseline_intensity"] > out["expected_intensity"]


def test_batch_spreads_when_a_zone_fills(service):
    # 64 vCPU per zone-hour: a zone holds 4 of these jobs at a time, about 10 before the deadline.
    body = thesis_body(
        number_of_jobs=20,
        eligible_regions=["FR", "SE-SE3", "FI"],
        cpu=16,
        duration=4,
        deadline=iso(datetime.now(UTC) + timedelta(hours=12)),
    )
    out = post(service, body).json()
    assert len(out["placements"]) == 20
    zones = {p["scheduling_location"] for p in out["placements"]}
    assert len(zones) > 1


def test_same_input_same_answer_on_a_fresh_ledger():
    body = thesis_body(deadline=iso(datetime.now(UTC).replace(minute=0, second=0) + timedelta(days=3)))
    answers = []
    for _ in range(2):
        with SchedulerServer() as s:
            s.headers = s.admin_headers
            out = post(s, body).json()
            answers.append((out["scheduling_location"], out["expected_intensity"]))
    assert answers[0] == answers[1]


@pytest.mark.parametrize(
    "over,code,field",
    [
        ({"eligible_regions": ["FR", "ATLANTIS"]}, 422, "eligible_regions: unknown zone(s) ATLANTIS"),
        ({"eligible_regions": []}, 422, "eligible_regions:"),
        ({"deadline": "2020-01-01T00:00:00Z"}, 422, "deadline:"),
        ({"deadline": "tomorrow"}, 422, "deadline:"),
        ({"deadline": "2027-01-01T00:00:00"}, 422, "deadline:"),
        ({"duration": 200}, 422, "duration:"),
        ({"duration": "six"}, 422, "duration:"),
        ({"cpu": "4"}, 422, "cpu:"),
        ({"memory": -1}, 422, "memory:"),
        ({"number_of_jobs": 0}, 422, "number_of_jobs:"),
        ({"req_timeout": 0}, 422, "req_timeout:"),
        ({"gpus": 1}, 422, "gpus:"),
        ({"origin_zone": "NOWHERE"}, 422, "origin_zone: unknown zone"),
    ],
)
def test_bad_input_is_a_4xx_naming_the_field(service, over, code, field):
    r = post(service, thesis_body(**over))
    assert r.status_code == code, r.text
    assert field in r.json()["detail"]


def test_missing_fields_are_named(service):
    r = httpx.post(f"{service.url}/scheduling", json={"eligible_regions": ["FR"]}, headers=service.headers)
    assert r.status_code == 422
    for f in ("deadline", "duration", "cpu", "memory"):
        assert f"{f}: Field required" in r.json()["detail"]


def test_not_json_is_a_4xx(service):
    r = httpx.post(
        f"{service.url}/scheduling",
        content=b"{nope",
        headers={**service.headers, "Content-Type": "application/json"},
    )
    assert r.status_code == 422


def test_full_calendar_is_a_409(service):
    body = thesis_body(
        eligible_regions=["ZA"],
        cpu=64,
        duration=1,
        number_of_jobs=1,
        deadline=iso(datetime.now(UTC) + timedelta(hours=1, minutes=1)),
    )
    codes = [post(service, body).status_code for _ in range(4)]
    assert codes[0] == 200 and 409 in codes


def test_health_and_openapi(service):
    assert httpx.get(f"{service.url}/healthz").json()["status"] == "ok"
    ready = httpx.get(f"{service.url}/readyz").json()
    assert ready["source"] == "profiles" and ready["zones"] >= 40
    assert httpx.get(f"{service.url}/openapi.json").status_code == 401  # the schema is a reader's
    spec = httpx.get(f"{service.url}/openapi.json", headers=service.headers).json()
    assert "/scheduling" in spec["paths"] and "SchedulingRequest" in spec["components"]["schemas"]


def test_logs_are_structured_json(service):
    post(service, thesis_body())
    import json

    lines = [json.loads(line) for line in service.log.read_text().splitlines() if line.startswith("{")]
    placed = [x for x in lines if x.get("event") == "scheduling.placed"]
    assert placed and {"zone", "start", "expected", "baseline", "elapsed_ms", "timestamp", "level"} <= set(placed[-1])
    assert placed[-1]["principal"] == "service-test" and placed[-1]["tenant"] == "default"


def test_earliest_start_moves_the_search_window(service):
    later = datetime.now(UTC).replace(microsecond=0) + timedelta(hours=30)
    out = post(service, thesis_body(earliest_start=iso(later), deadline=iso(later + timedelta(hours=12)))).json()
    start = datetime.fromisoformat(out["scheduling_time"].replace("Z", "+00:00"))
    assert later <= start <= later + timedelta(hours=6)
    r = post(service, thesis_body(earliest_start=iso(later), deadline=iso(later + timedelta(hours=5))))
    assert (
        r.status_code == 422
        and f"does not fit between the earliest start {iso(later)} and the deadline" in r.json()["detail"]
    )
