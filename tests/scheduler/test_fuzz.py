"""Property-based fuzzing of the live service from its own OpenAPI schema, on SQLite and on
PostgreSQL: no request gets a 5xx, whoever sends it (the platform's admin, a tenant's token, or
nobody), and whatever it carries.

Schemathesis generates requests the schema describes; three in four then have one body field, query
or path parameter replaced by what the schema cannot describe but callers send (issue 44's bounds
probe): instants at either end of the calendar with an offset, documents nested hundreds of levels
deep, NUL bytes, strings longer than any column, lifecycles longer than the record keeps."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import ExitStack
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from greenops.local.postgres import PostgresServer
from greenops.local.scheduler import SchedulerServer
from tests.support.bookings import booking

pytestmark = pytest.mark.integration

WHO = st.sampled_from(["admin", "tenant", "admin", "tenant", "nobody"])  # most requests get past the credential
BOOKED = ("fuzz/a", "fuzz/b", "fuzz/c")  # booked before the fuzzing, so that PATCH and DELETE reach rows

_OFFSETS = [timezone(timedelta(hours=h)) for h in (-12, -1, 0, 5.5, 14)]


# Instants anywhere in the calendar, the ends above all, with offsets that push the ends past it.
edge_instants = st.one_of(
    st.sampled_from(
        [
            "0001-01-01T00:00:00+14:00",
            "9999-12-31T23:59:59-12:00",
            "0001-01-01T00:00:00Z",
            "9999-12-31T23:59:59Z",
            "0001-01-01T13:59:59+14:00",
            "9999-12-31T12:00:00-12:00",
        ]
    ),
    st.builds(
        lambda dt, tz: dt.replace(tzinfo=tz).isoformat(),
        st.one_of(
            st.datetimes(max_value=datetime(1, 1, 3)),
            st.datetimes(min_value=datetime(9999, 12, 29)),
            st.datetimes(),
        ),
        st.sampled_from(_OFFSETS),
    ),
)


def _nested(depth: int, as_lists: bool) -> Any:
    value: Any = []
    for _ in range(depth):
        value = [value] if as_lists else {"a": value}
    return value


# A document such as a workload or an explanation: an object with a name, nested to any depth.
deep_documents = st.builds(
    lambda depth, as_lists: {"name": "fuzz", "x": _nested(depth, as_lists)},
    st.integers(min_value=20, max_value=400),
    st.booleans(),
)
nul_strings = st.builds(lambda a, b: f"{a}\x00{b}", st.text(max_size=8), st.text(max_size=8))
long_strings = st.integers(min_value=65, max_value=20_000).map(lambda n: "k" * n)
hostile_strings = st.one_of(nul_strings, long_strings, edge_instants)


def _lifecycle(events: int, reason: str) -> dict[str, Any]:
    event = {"at": "2027-01-10T03:00:00Z", "phase": "Scheduled", "reason": reason}
    return {"phase": "Scheduled", "reason": reason, "events": [event] * events}


long_lifecycles = st.builds(
    _lifecycle, st.integers(min_value=0, max_value=60), st.one_of(st.just("r"), nul_strings, long_strings)
)
# a map such as regions (zone -> provider/region): hostile zones, and a region longer than its column
hostile_maps = st.dictionaries(
    st.one_of(hostile_strings, st.sampled_from(["FR", "DE"])),
    st.sampled_from(["azure/westeurope", "aws/" + "x" * 70]),
    min_size=1,
    max_size=3,
)
hostile_lists = st.lists(hostile_strings, min_size=1, max_size=3)
hostile_values = st.one_of(hostile_strings, deep_documents, long_lifecycles, hostile_maps, hostile_lists)


def hostile_for(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    """Mostly what attacks a field of this (OpenAPI) schema where it is stored or compared, now and
    then anything hostile (a type the field does not take)."""
    written = json.dumps(schema)
    if '"date-time"' in written:
        fitting = edge_instants
    elif '"object"' in written or '"$ref"' in written:
        fitting = st.one_of(deep_documents, long_lifecycles, hostile_maps)
    elif '"array"' in written:
        fitting = hostile_lists
    else:
        fitting = hostile_strings
    return st.one_of(fitting, fitting, fitting, hostile_values)


def body_fields(op: Any) -> dict[str, dict[str, Any]]:
    """The JSON body's fields of ``op`` and their schemas, from the service's own schema."""
    body = op.definition.raw.get("requestBody", {}).get("content", {}).get("application/json", {})
    ref = body.get("schema", {}).get("$ref", "")
    if not ref:
        return {}
    properties: dict[str, dict[str, Any]] = op.schema.raw_schema["components"]["schemas"][ref.rsplit("/", 1)[1]].get(
        "properties", {}
    )
    return properties


def mix_in(case: Any, data: st.DataObject) -> str:
    """Replace one body field, query or path parameter of ``case`` by a hostile value; what was
    replaced, for the failure's message."""
    raw = case.operation.definition.raw
    params = {(p["in"], p["name"]): p.get("schema", {}) for p in raw.get("parameters", []) if p["in"] != "header"}
    if isinstance(case.body, dict):
        params.update({("body", name): schema for name, schema in body_fields(case.operation).items()})
    if not params:
        return "nothing"
    where, name = data.draw(st.sampled_from(sorted(params)), label="where")
    value = data.draw(hostile_for(params[(where, name)]), label="value")
    if where == "body":
        case.body[name] = value
    elif where == "query":
        case.query = {**(case.query or {}), name: value if isinstance(value, str) else json.dumps(value)}
    else:
        if name == "key" and data.draw(st.booleans(), label="a booked key"):
            value = data.draw(st.sampled_from(BOOKED), label="key")
        case.path_parameters = {**case.path_parameters, name: value if isinstance(value, str) else json.dumps(value)}
    return f"{where} {name}"


@pytest.fixture(params=["sqlite", "postgresql"])
def service(request: pytest.FixtureRequest) -> Iterator[SchedulerServer]:
    with ExitStack() as stack:
        database = stack.enter_context(PostgresServer()).url if request.param == "postgresql" else None
        # room for any request (the record counts milli-vCPUs in 32-bit integers on PostgreSQL)
        yield stack.enter_context(SchedulerServer(capacity_vcpu=1e6, database=database))


def test_no_request_gets_a_server_error(service: SchedulerServer):
    callers = {
        "admin": service.admin_headers,
        "tenant": {"Authorization": f"Bearer {service.issue('fuzz', ['fuzz'])}"},
        "nobody": {},
    }
    deadline = (datetime.now(UTC) + timedelta(days=1)).isoformat()
    for key in BOOKED:
        body = booking(deadline=deadline, tenant="fuzz")
        r = httpx.put(f"{service.url}/reservations/{key}", json=body, headers=callers["tenant"], timeout=15)
        assert r.status_code == 200, r.text
    schema = schemathesis.openapi.from_url(f"{service.url}/openapi.json", headers=service.admin_headers)
    operations = [result.ok() for result in schema.get_all_operations()]
    assert {op.path for op in operations} >= {"/scheduling", "/healthz", "/readyz", "/credentials"}
    seen: dict[int, int] = {}
    mixed_in: dict[str, int] = {}
    for op in operations:
        # three in four requests carry a hostile value, where the operation takes one
        hostile = st.integers(0, 3).map(bool)
        takes = op.definition.raw.get("parameters") or op.definition.raw.get("requestBody")

        @given(case=op.as_strategy(), who=WHO, hostile=hostile, data=st.data())
        @settings(
            max_examples=500 if op.path == "/scheduling" else 80 if takes else 5,
            deadline=None,
            suppress_health_check=list(HealthCheck),
            database=None,
        )
        def call(case, who, hostile, data):
            mixed = mix_in(case, data) if hostile else "nothing"
            mixed_in[mixed] = mixed_in.get(mixed, 0) + 1
            response = case.call(timeout=15, headers=callers[who])
            seen[response.status_code] = seen.get(response.status_code, 0) + 1
            sent = json.dumps(case.body, default=str)[:300] if isinstance(case.body, dict) else ""
            assert response.status_code < 500, (
                f"{who}: {case.method} {case.formatted_path} {case.query!r} {sent} (hostile: {mixed}) -> "
                f"{response.status_code} {response.text[:300]}"
            )

        call()
    hostile_sent = sum(n for where, n in mixed_in.items() if where != "nothing")
    print(f"\nstatuses {dict(sorted(seen.items()))}; {hostile_sent} hostile values, at {len(mixed_in) - 1} places")
    # the fuzzer reached the happy path, the validation errors and the refusals
    assert {200, 401, 422} <= set(seen), seen
