"""Hostile input at the edges of what the record can hold, against the real scheduler process on
SQLite and on PostgreSQL: instants at the ends of the calendar, documents nested hundreds of levels
deep, NUL bytes, lifecycles longer than the record keeps, fields longer than their columns. Each is
a 422 naming the field and the reason, and the record is the same afterwards (round two of the
tenancy audit: each was a 500, or written unbounded, before)."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator

import httpx
import pytest

from greenops.local.postgres import PostgresServer
from greenops.local.scheduler import SchedulerServer
from greenops.placing.lifecycle import MAX_EVENTS
from tests.support.bookings import NOW, booking
from tests.support.tenancy import Tenancy

pytestmark = pytest.mark.integration

YEAR_1_EAST = "0001-01-01T00:00:00+14:00"  # before the calendar's first instant once in UTC
YEAR_9999_WEST = "9999-12-31T23:59:59-12:00"  # after its last one
EDGES = [YEAR_1_EAST, YEAR_9999_WEST]
# the forecast's other parameter, for each edge in each of its parameters
OTHER_END = {
    (YEAR_1_EAST, "start"): ("end", "0001-01-01T12:00:00Z"),
    (YEAR_1_EAST, "end"): ("start", "0001-01-01T00:00:00Z"),
    (YEAR_9999_WEST, "start"): ("end", "9999-12-31T23:59:59Z"),
    (YEAR_9999_WEST, "end"): ("start", "9999-12-31T12:00:00Z"),
}


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def hostile(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Tenancy]:
    """A real scheduler on each backend, holding one booking of team-a's (team-a/held)."""
    log = tmp_path_factory.mktemp(f"bounds-{request.param}") / "scheduler.log"
    with PostgresServer() if request.param == "postgresql" else contextlib.nullcontext() as pg:
        database = pg.url if pg is not None else None
        with SchedulerServer(log=log, database=database, env={"GREENOPS_NOW": NOW}) as sched:
            tenancy = Tenancy.issued(sched)
            held = tenancy.call("PUT", "/reservations/team-a/held", tenancy.team_a, json=booking())
            assert held.status_code == 200, held.text
            yield tenancy


def record(t: Tenancy) -> tuple[object, object]:
    """Everything a refused request could have written: every reservation as the admin reads it, in
    any phase and in detail, and every credential."""
    admin = t.sched.admin_token
    rows = t.call("GET", "/reservations?all=true&detail=true", admin)
    tokens = t.call("GET", "/credentials", admin)
    assert rows.status_code == tokens.status_code == 200
    return rows.json(), tokens.json()


def refused(r, field: str) -> None:
    assert r.status_code == 422, (r.status_code, r.text[:500])
    detail = r.json()["detail"]
    assert field in detail, detail
    assert "Traceback" not in r.text


@pytest.mark.parametrize("instant", EDGES, ids=["year-1-at-+14", "year-9999-at--12"])
@pytest.mark.parametrize(
    ("method", "path", "field"),
    [
        ("POST", "/scheduling", "deadline"),
        ("POST", "/scheduling", "earliest_start"),
        ("PUT", "/reservations/team-a/edge", "deadline"),
        ("GET", "/forecast/FR", "start"),
        ("GET", "/forecast/FR", "end"),
        ("POST", "/credentials", "expires_at"),
    ],
    ids=["deadline", "earliest_start", "put-deadline", "forecast-start", "forecast-end", "token-expiry"],
)
def test_an_instant_past_either_end_of_the_calendar_in_utc_is_422(
    hostile: Tenancy, method: str, path: str, field: str, instant: str
):
    """Converting either instant to UTC overflows Python's datetime: a 500 before."""
    before = record(hostile)
    token = hostile.team_a
    if path == "/forecast/FR":
        other, value = OTHER_END[(instant, field)]  # within the calendar, so that only ``field`` is at fault
        r = hostile.call(method, path, token, params={field: instant, other: value})
    elif path == "/credentials":
        body = {"name": "edge", "tenants": ["team-a"], "expires_at": instant}
        r = hostile.call(method, path, hostile.sched.admin_token, json=body)
    else:
        r = hostile.call(method, path, token, json=booking(**{field: instant}))
    refused(r, field)
    assert "UTC" in r.json()["detail"]
    assert record(hostile) == before


def nested_lists(depth: int) -> str:
    return "[" * depth + "]" * depth  # 300 levels in 600 bytes


def nested_objects(depth: int) -> str:
    return '{"a":' * depth + "{}" + "}" * depth


@pytest.mark.parametrize("field", ["workload", "explanation"])
@pytest.mark.parametrize("shape", [nested_lists, nested_objects], ids=["lists", "objects"])
def test_a_document_nested_300_levels_deep_is_422_naming_the_field(hostile: Tenancy, field: str, shape):
    """300 levels passed the size bound and overflowed pydantic's serialiser: a 500 before."""
    before = record(hostile)
    inner = shape(300)
    document = '{"name": "deep", "x": ' + inner + "}" if field == "workload" else '{"x": ' + inner + "}"
    body = json.dumps(booking())[:-1] + f', "{field}": {document}' + "}"
    headers = {"Authorization": f"Bearer {hostile.team_a}", "Content-Type": "application/json"}
    r = httpx.put(f"{hostile.sched.url}/reservations/team-a/deep", content=body, headers=headers, timeout=15)
    refused(r, field)
    assert "nested deeper than" in r.json()["detail"]
    assert record(hostile) == before


def test_a_document_within_the_depth_bound_is_kept_as_sent(hostile: Tenancy):
    workload = {"name": "shallow", "spec": json.loads(nested_lists(20))}
    r = hostile.call("PUT", "/reservations/team-a/shallow", hostile.team_a, json=booking(workload=workload))
    assert r.status_code == 200, r.text
    assert hostile.call("GET", "/reservations/team-a/shallow", hostile.team_a).json()["workload"] == workload


@pytest.mark.parametrize(
    ("method", "path", "field"),
    [
        *[
            ("GET", f"/reservations?{p}=a%00b", p)
            for p in ("tenant", "zone", "region", "provider", "path", "phase", "key_prefix")
        ],
        ("GET", "/dashboard?tenant=a%00b", "tenant"),
        ("GET", "/dashboard?phase=a%00b", "phase"),
        ("GET", "/dashboard/api/placements?region=a%00b", "region"),
        ("GET", "/dashboard/api/placements?provider=a%00b", "provider"),
        ("GET", "/dashboard/explain/team-a/a%00b", "key"),
        ("DELETE", "/reservations/team-a/held?reason=a%00b", "reason"),
        # whose key it is (keys are their tenant's): found by the fuzzer, a 500 on PostgreSQL
        ("GET", "/reservations/team-a/held?tenant=a%00b", "tenant"),
        ("DELETE", "/reservations/team-a/held?tenant=a%00b", "tenant"),
        ("GET", "/dashboard/explain/team-a/held?tenant=a%00b", "tenant"),
        ("DELETE", "/credentials/tok_%00", "token_id"),
    ],
    ids=lambda v: v if isinstance(v, str) and "/" not in v else None,
)
def test_a_nul_byte_in_a_query_or_path_parameter_is_422_naming_it(hostile: Tenancy, method: str, path: str, field: str):
    """PostgreSQL refuses NUL in text: each reached the database and was a 500 there."""
    before = record(hostile)
    token = hostile.sched.admin_token if path.startswith(("/credentials", "/dashboard")) else hostile.team_a
    r = hostile.call(method, path, token)
    refused(r, field)
    assert record(hostile) == before


def _events(n: int) -> list[dict[str, str]]:
    return [{"at": "2027-01-10T03:00:00Z", "phase": "Scheduled", "reason": f"event {i}"} for i in range(n)]


def test_a_lifecycle_of_more_events_than_the_record_keeps_is_422(hostile: Tenancy):
    """A lifecycle keeps its newest MAX_EVENTS transitions; a report of 500 was stored whole before."""
    before = record(hostile)
    report = {"lifecycle": {"phase": "Scheduled", "events": _events(MAX_EVENTS + 1)}}
    r = hostile.call("PATCH", "/reservations/team-a/held", hostile.team_a, json=report)
    refused(r, "lifecycle.events")
    assert str(MAX_EVENTS) in r.json()["detail"]
    assert record(hostile) == before
    # as many as a lifecycle keeps is recorded, as before
    kept = {"lifecycle": {"phase": "Scheduled", "events": _events(MAX_EVENTS)}}
    ok = hostile.call("PATCH", "/reservations/team-a/held", hostile.team_a, json=kept)
    assert ok.status_code == 200, ok.text
    assert len(ok.json()["lifecycle"]["events"]) == MAX_EVENTS


@pytest.mark.parametrize(
    ("method", "path", "body", "field"),
    [
        # a region longer than the record's column (64): a 500 on PostgreSQL
        ("POST", "/scheduling", booking(regions={"FR": "azure/" + "x" * 100, "DE": "azure/x"}), "regions"),
        ("POST", "/scheduling", booking(regions={"z" * 10_000: "azure/westeurope"}), "regions"),
        ("POST", "/scheduling", booking(regions={f"Z{i}": "azure/westeurope" for i in range(2000)}), "regions"),
        # a NUL byte in the reason column: a 500 on PostgreSQL
        ("PATCH", "/reservations/team-a/held", {"phase": "Running", "reason": "a\x00b"}, "reason"),
        (
            "PATCH",
            "/reservations/team-a/held",
            {"lifecycle": {"phase": "Scheduled", "reason": "r" * 100_000}},
            "lifecycle",
        ),
        (
            "PATCH",
            "/reservations/team-a/held",
            {"lifecycle": {"phase": "Scheduled", "events": [{**e, "reason": "r" * 9000} for e in _events(10)]}},
            "lifecycle",
        ),
    ],
    ids=[
        "region-longer-than-its-column",
        "zone-longer-than-a-zone",
        "more-zones-than-a-request-has",
        "nul-in-a-reason",
        "a-100-kB-lifecycle-reason",
        "a-90-kB-lifecycle",
    ],
)
def test_every_stored_field_is_bounded(hostile: Tenancy, method: str, path: str, body: dict, field: str):
    before = record(hostile)
    r = hostile.call(method, path, hostile.team_a, json=body)
    refused(r, field)
    assert record(hostile) == before


def test_the_dashboards_empty_filters_still_mean_every_value(hostile: Tenancy):
    """The page's form sends every filter, an empty one for "all": that is no 422."""
    everything = hostile.call("GET", "/dashboard/api/placements", hostile.reader)
    empty = hostile.call("GET", "/dashboard/api/placements?tenant=&provider=&region=&phase=", hostile.reader)
    assert everything.status_code == empty.status_code == 200
    assert empty.json() == everything.json() and empty.json()["placements"]
    page = hostile.call("GET", "/dashboard?tenant=&phase=", hostile.reader)
    assert page.status_code == 200, page.text[:300]
